package localec2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region the local EC2 serves by default; moto serves every
// region, but its zone names and instance type offerings are the real ones
// of the region asked for.
const Region = "us-east-1"

// Binary is the moto server executable looked up on PATH.
const Binary = "moto_server"

// InstallHint says how to get Binary when it is missing.
const InstallHint = "pip install 'moto[server]' (Python moto 5.x provides the moto_server command)"

// Server is a running moto_server on a loopback port.
type Server struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:40123.
	Endpoint string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	logPath  string
}

// StartOptions configure Start.
type StartOptions struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// LogPath receives moto_server's output; a temporary file when empty.
	LogPath string
	// StartTimeout bounds the wait for the server to answer (default 30s).
	StartTimeout time.Duration
}

// Start runs moto_server on 127.0.0.1 and waits until it answers. The
// caller must Stop it. A missing moto_server is an error that says what to
// install: tests fail with it rather than skip.
func Start(ctx context.Context, opts StartOptions) (*Server, error) {
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return nil, fmt.Errorf("starting the local EC2: %s is not on PATH; install it with %s: %w", Binary, InstallHint, err)
	}
	// A free port picked here may be taken by another moto_server before
	// ours binds it (then ours exits): pick another, twice at most.
	for attempt := 0; ; attempt++ {
		s, err := start(ctx, bin, opts)
		if err == nil || opts.Port != 0 || attempt == 2 || !errors.Is(err, errExited) {
			return s, err
		}
	}
}

// errExited: moto_server ended before it answered.
var errExited = errors.New("exited before answering")

func start(ctx context.Context, bin string, opts StartOptions) (*Server, error) {
	var err error
	port := opts.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("starting the local EC2: %w", err)
		}
	}
	logPath := opts.LogPath
	var logFile *os.File
	if logPath == "" {
		logFile, err = os.CreateTemp("", "moto-server-*.log")
	} else {
		logFile, err = os.Create(logPath)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the local EC2: creating its log: %w", err)
	}
	logPath = logFile.Name()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Its own process group, so Stop also ends anything it forked.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the local EC2: running %s: %w", bin, err)
	}
	s := &Server{
		Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port),
		cmd:      cmd,
		done:     make(chan struct{}),
		logPath:  logPath,
	}
	go func() {
		s.waitErr = cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("starting the local EC2 (log %s): %w", logPath, err)
	}
	return s, nil
}

// waitReady polls the server until it answers HTTP, it exits, or the
// timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/moto-api/data.json", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			// The answer is ours only once our moto_server says it
			// listens: the free port was found by closing a listener, so
			// another package's moto_server may have taken it first (then
			// ours exits with "Address already in use", and its answers
			// would have been the other's).
			if log, err := os.ReadFile(s.logPath); err == nil && strings.Contains(string(log), "Running on "+s.Endpoint) {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s %w: %v", Binary, errExited, s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s within %s", Binary, s.Endpoint, timeout)
		case <-tick.C:
		}
	}
}

// LogPath is the file holding moto_server's output.
func (s *Server) LogPath() string { return s.logPath }

// Stop ends the server and waits for it to exit. It is safe to call twice.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd.Process != nil {
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		}
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	})
	return nil
}

// Config returns an SDK configuration that talks to the server: static
// credentials, Region and the server as every service's base endpoint.
func (s *Server) Config() aws.Config {
	return Config(s.Endpoint, Region)
}

// Config returns an SDK configuration for a local AWS at endpoint.
func Config(endpoint, region string) aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(endpoint),
		// moto answers at once; a short backoff keeps injected failures
		// from slowing tests.
		RetryMaxAttempts: 3,
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("finding a free loopback port: not a TCP address")
	}
	return addr.Port, nil
}
