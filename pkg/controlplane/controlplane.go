package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Addresses inside the simulated cluster. They are never routed anywhere.
const (
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1"
	podCIDR             = "10.128.0.0/9"
)

// stopGrace is how long a component gets to exit after SIGTERM.
const stopGrace = 5 * time.Second

// ControlPlane is a local Kubernetes control plane made of child processes.
// Create it with New, then Start it; Stop it when done, also after a failed
// Start. Its methods are safe for concurrent use.
type ControlPlane struct {
	opts   Options
	binDir string
	scheme *runtime.Scheme

	mu        sync.Mutex
	started   bool
	stopped   bool
	failed    bool // Start failed: Stop keeps the run directory for diagnosis
	runDir    string
	ownRunDir bool
	procsMu   sync.Mutex
	procs     []*process
	pki       *pki

	apiserverURL  string
	apiserverPort int
	etcdURL       string
	// servingPorts are the secure ports of kube-scheduler and
	// kube-controller-manager, by binary name (see Metrics), guarded by
	// portsMu: Start holds mu while it starts them.
	portsMu        sync.Mutex
	servingPorts   map[string]int
	kubeconfigPath string
	config         *rest.Config
	client         client.Client
}

// New validates opts and returns a control plane ready to Start. It fails
// when a binary the options need is missing.
func New(opts Options) (*ControlPlane, error) {
	binDir, err := opts.validate()
	if err != nil {
		return nil, err
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
		if err := apiextensionsv1.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return &ControlPlane{opts: opts, binDir: binDir, scheme: scheme}, nil
}

// Start runs the components, waits until each is healthy and installs the
// CRDs of the options. On failure the error carries the tail of the failing
// component's log; the run directory is kept, and Stop must still be called.
func (cp *ControlPlane) Start(ctx context.Context) (err error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return errStopped
	}
	if cp.started {
		return errors.New("control plane already started")
	}
	cp.started = true
	defer func() {
		if err != nil {
			cp.failed = true
			cp.stopProcesses()
			err = fmt.Errorf("starting control plane (run directory %s): %w", cp.runDir, err)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()

	if err := cp.makeRunDir(); err != nil {
		return err
	}
	if cp.pki, err = writePKI(filepath.Join(cp.runDir, "pki"), time.Now()); err != nil {
		return err
	}

	etcdURL, err := cp.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := cp.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	if err := cp.writeKubeconfig(); err != nil {
		return err
	}
	if cp.client, err = client.New(cp.config, client.Options{Scheme: cp.scheme}); err != nil {
		return fmt.Errorf("creating client: %w", err)
	}

	// The rest only need kube-apiserver: start them side by side.
	var (
		wg   sync.WaitGroup
		errs = make([]error, 4)
	)
	run := func(i int, f func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(ctx) }()
	}
	if cp.opts.Scheduler {
		run(0, cp.startScheduler)
	}
	if cp.opts.ControllerManager {
		run(1, cp.startControllerManager)
	}
	if cp.opts.Kwok {
		run(2, cp.startKwok)
	}
	if len(cp.opts.CRDDirectories) > 0 || len(cp.opts.CRDs) > 0 {
		run(3, func(ctx context.Context) error {
			return installCRDs(ctx, cp.config, cp.opts.CRDDirectories, cp.opts.CRDs)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stop kills every component and removes the run directory when New made
// it (unless Start failed). It is safe to call more than once and before or
// after a failed Start.
func (cp *ControlPlane) Stop() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return nil
	}
	cp.stopped = true
	cp.stopProcesses()
	if cp.ownRunDir && !cp.failed && cp.runDir != "" {
		if err := os.RemoveAll(cp.runDir); err != nil {
			return fmt.Errorf("removing run directory: %w", err)
		}
	}
	return nil
}

// Config returns a copy of the admin *rest.Config (system:masters), or nil
// before Start.
func (cp *ControlPlane) Config() *rest.Config {
	if cp.config == nil {
		return nil
	}
	return rest.CopyConfig(cp.config)
}

// Client returns a controller-runtime client, not cached, with the admin
// identity and the scheme of the options.
func (cp *ControlPlane) Client() client.Client { return cp.client }

// Scheme returns the scheme of Client.
func (cp *ControlPlane) Scheme() *runtime.Scheme { return cp.scheme }

// KubeconfigPath returns the path of the admin kubeconfig file.
func (cp *ControlPlane) KubeconfigPath() string { return cp.kubeconfigPath }

// Metrics returns the /metrics page of kube-scheduler or
// kube-controller-manager ("kube-scheduler", "kube-controller-manager"),
// read with the admin client certificate: what a benchmark reads of their
// queues and API calls.
func (cp *ControlPlane) Metrics(ctx context.Context, component string) ([]byte, error) {
	cp.portsMu.Lock()
	port, ok := cp.servingPorts[component]
	cp.portsMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no serving port for %q: want %s or %s, started", component, binScheduler, binControllerManager)
	}
	hc, err := cp.httpsClient(true)
	if err != nil {
		return nil, err
	}
	b, err := get(ctx, hc, loopbackURL("https", port)+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("reading %s metrics: %w", component, err)
	}
	return b, nil
}

// LogDir returns the directory of the components' logs.
func (cp *ControlPlane) LogDir() string { return filepath.Join(cp.runDir, "logs") }

// LogPath returns the log file of a component, by binary name
// ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kwok").
func (cp *ControlPlane) LogPath(component string) string {
	return filepath.Join(cp.LogDir(), component+".log")
}

// InstallCRDs installs the CRDs found in dirs and docs, updating those that
// exist, and waits until they are Established and served.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, dirs []string, docs ...[]byte) error {
	return installCRDs(ctx, cp.config, dirs, docs)
}

func (cp *ControlPlane) makeRunDir() error {
	if cp.opts.RunDir != "" {
		dir, err := filepath.Abs(cp.opts.RunDir)
		if err != nil {
			return fmt.Errorf("resolving run directory: %w", err)
		}
		cp.runDir = dir
		// A kept run directory starts clean: old etcd data would not match
		// the new certificates and keys.
		for _, sub := range []string{"etcd", "pki", "logs", "home"} {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				return fmt.Errorf("cleaning run directory: %w", err)
			}
		}
	} else {
		removeStaleRunDirs()
		dir, err := os.MkdirTemp("", runDirPrefix)
		if err != nil {
			return fmt.Errorf("creating run directory: %w", err)
		}
		cp.runDir, cp.ownRunDir = dir, true
	}
	for _, sub := range []string{"logs", "home"} {
		if err := os.MkdirAll(filepath.Join(cp.runDir, sub), 0o755); err != nil {
			return fmt.Errorf("creating run directory: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(cp.runDir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("writing run directory owner: %w", err)
	}
	return nil
}

const (
	runDirPrefix = "joiner-cp-"
	ownerFile    = "owner.pid"
)

// removeStaleRunDirs removes the temporary run directories of processes that
// died without calling Stop (a panicking test binary, a timeout).
func removeStaleRunDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// stopProcesses stops the clients of kube-apiserver together, then
// kube-apiserver, then etcd. They get stopGrace to exit cleanly when the run
// directory is kept; otherwise nothing of theirs survives them and they are
// killed at once. The caller holds cp.mu.
func (cp *ControlPlane) stopProcesses() {
	cp.procsMu.Lock()
	defer cp.procsMu.Unlock()
	grace := stopGrace
	if cp.ownRunDir && !cp.failed {
		grace = 0
	}
	var clients, servers []*process
	for _, p := range cp.procs {
		if p.name == binEtcd || p.name == binAPIServer {
			servers = append(servers, p)
		} else {
			clients = append(clients, p)
		}
	}
	var wg sync.WaitGroup
	for _, p := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(grace) }()
	}
	wg.Wait()
	for i := len(servers) - 1; i >= 0; i-- {
		servers[i].stop(grace)
	}
	cp.procs = nil
}

// RestartAPIServer kills kube-apiserver (SIGKILL, as a crashed or
// rebooted control-plane node would), waits down, and starts it again on
// the same address with the same etcd, returning once it serves. Clients
// and the kubeconfig keep working; watches break and must re-list, which is
// what a chaos test wants to exercise.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, down time.Duration) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped || !cp.started {
		return errors.New("restarting kube-apiserver: the control plane is not running")
	}
	cp.procsMu.Lock()
	var old *process
	kept := cp.procs[:0]
	for _, p := range cp.procs {
		if p.name == binAPIServer && p.exitErr() == nil {
			old = p
			continue
		}
		kept = append(kept, p)
	}
	cp.procs = kept
	cp.procsMu.Unlock()
	if old != nil {
		old.stop(0)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	ctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()
	if err := cp.runAPIServer(ctx, cp.etcdURL, []int{cp.apiserverPort}); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	return nil
}

// Pause freezes a running component (SIGSTOP to its process group) until
// resume is called (SIGCONT); resume may be called more than once, and Stop
// works on a paused component. A paused kwok keeps holding the Leases of the
// nodes it plays but stops renewing them, so kube-controller-manager finds
// their kubelets silent and marks the Nodes and their pods not ready, as
// when a host stalls; resumed, it plays those nodes again.
func (cp *ControlPlane) Pause(component string) (resume func(), err error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped || !cp.started {
		return nil, fmt.Errorf("pausing %s: the control plane is not running", component)
	}
	cp.procsMu.Lock()
	var target *process
	for _, p := range cp.procs {
		if p.name == component && p.exitErr() == nil {
			target = p
		}
	}
	cp.procsMu.Unlock()
	if target == nil {
		return nil, fmt.Errorf("pausing %s: no such component running", component)
	}
	pgid := target.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pausing %s: %w", component, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = syscall.Kill(-pgid, syscall.SIGCONT) }) }, nil
}

// component describes how to run one binary.
type component struct {
	name  string
	ports int // free loopback ports it needs
	// fixed, when set, are the ports to use instead of free ones (a
	// restart keeps its address).
	fixed []int
	args  func(ports []int) []string
	// healthy returns nil once the component serves.
	healthy func(ctx context.Context, ports []int) error
}

// launch starts c and waits until it is healthy, retrying with new ports
// when one was taken in the meantime.
func (cp *ControlPlane) launch(ctx context.Context, c component) ([]int, error) {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		ports := c.fixed
		if ports == nil {
			var err error
			if ports, err = freePorts(c.ports); err != nil {
				return nil, err
			}
		}
		args := append(c.args(ports), cp.opts.ExtraArgs[c.name]...)
		p, err := startProcess(c.name, filepath.Join(cp.binDir, c.name), args, cp.childEnv(), cp.LogPath(c.name))
		if err != nil {
			return nil, err
		}
		cp.track(p)
		err = waitHealthy(ctx, p, func(ctx context.Context) error { return c.healthy(ctx, ports) })
		if err == nil {
			return ports, nil
		}
		if c.fixed == nil && p.exitErr() != nil && errAddrInUse(p.logPath) && attempt < attempts {
			continue
		}
		return nil, p.failure(err)
	}
}

// track records p for Stop. Components launched side by side call it
// concurrently while Start holds cp.mu.
func (cp *ControlPlane) track(p *process) {
	cp.procsMu.Lock()
	defer cp.procsMu.Unlock()
	cp.procs = append(cp.procs, p)
}

// childEnv is the environment of every component: the caller's, without
// anything that would point a component at another cluster or configure etcd
// behind our back, and with a private HOME.
func (cp *ControlPlane) childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "KUBECONFIG", name == "POD_IP", name == "HOST_IP",
			strings.HasPrefix(name, "ETCD_"), strings.HasPrefix(name, "KWOK_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+filepath.Join(cp.runDir, "home"))
}

// waitHealthy polls check until it succeeds, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *process, check func(context.Context) error) error {
	const interval = 100 * time.Millisecond
	for {
		if err := p.exitErr(); err != nil {
			return err
		}
		checkCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last := check(checkCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy in time: %w", p.name, last)
		case <-p.exited:
		case <-time.After(interval):
		}
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// getOK returns nil when GET url answers 200.
func getOK(ctx context.Context, hc *http.Client, url string) error {
	_, err := get(ctx, hc, url)
	return err
}

// get returns the body of url, or an error naming the status and the
// start of the body unless it is 200 OK.
func get(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return io.ReadAll(resp.Body)
}

// httpsClient trusts the run's CA and, when withAdmin, presents the admin
// client certificate.
func (cp *ControlPlane) httpsClient(withAdmin bool) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cp.pki.caPEM) {
		return nil, errors.New("parsing ca certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withAdmin {
		cert, err := tls.X509KeyPair(cp.pki.adminCertPEM, cp.pki.adminKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading admin certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}, nil
}

func (cp *ControlPlane) writeKubeconfig() error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["joiner"] = &clientcmdapi.Cluster{Server: cp.apiserverURL, CertificateAuthorityData: cp.pki.caPEM}
	kc.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: cp.pki.adminCertPEM, ClientKeyData: cp.pki.adminKeyPEM}
	kc.Contexts["joiner"] = &clientcmdapi.Context{Cluster: "joiner", AuthInfo: adminUser, Namespace: "default"}
	kc.CurrentContext = "joiner"
	cp.kubeconfigPath = filepath.Join(cp.runDir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, cp.kubeconfigPath); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("building rest config: %w", err)
	}
	// Tests and simulations create objects in bursts; client-go's default
	// of 5 requests per second would be the bottleneck.
	cfg.QPS, cfg.Burst = 200, 400
	cp.config = cfg
	return nil
}
