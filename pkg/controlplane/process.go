package controlplane

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one running component. It runs in its own process group, so
// stopping it also stops anything it started, and it gets SIGKILL when the
// thread that started it dies (see spawn).
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	log     *os.File

	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // valid after exited is closed
}

// startProcess starts bin with args, its output going to logPath.
func startProcess(name, bin string, args []string, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s log: %w", name, err)
	}
	if _, err := fmt.Fprintf(logFile, "### %s %s\n", bin, strings.Join(args, " ")); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("writing %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// exitErr reports how the process ended, or nil while it still runs.
func (p *process) exitErr() error {
	select {
	case <-p.exited:
		if p.waitErr == nil {
			return fmt.Errorf("%s exited", p.name)
		}
		return fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	default:
		return nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace; a
// zero grace kills at once.
func (p *process) stop(grace time.Duration) {
	pgid := p.cmd.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		_ = syscall.Kill(-pgid, syscall.SIGCONT) // a paused process acts on SIGTERM only once it runs
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	// Anything the process left behind in its group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// failure wraps err with the tail of the process's log.
func (p *process) failure(err error) error {
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, p.logPath, tail(p.logPath, 40))
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxRead {
		_, _ = f.Seek(info.Size()-maxRead, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Children are started from one OS thread that never exits: Linux sends
// Pdeathsig when the thread that forked the child ends, not the process, and
// the Go runtime may retire ordinary threads at any time.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for req := range spawnReqs {
				req.done <- req.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// errAddrInUse tells whether a component failed because a port it was given
// was taken between our choosing it and its binding it.
func errAddrInUse(logPath string) bool {
	return strings.Contains(tail(logPath, 60), "address already in use")
}
