// Package operator builds the process joiner runs as: a controller-runtime
// manager with joiner's scheme, leader election (on by default, so two
// replicas are safe), the Prometheus /metrics endpoint, /healthz and
// /readyz probes and JSON logs. It decides how the process is wired; which
// controllers run is pkg/controllers' decision.
package operator

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/state"
)

// NewScheme returns a scheme with the Kubernetes built-in kinds and every
// joiner API (karpenter.sh/v1, karpenter.k8s.aws/v1, sim.joiner.dev).
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding kubernetes kinds to scheme: %w", err)
	}
	if err := apis.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding joiner kinds to scheme: %w", err)
	}
	return s, nil
}

// NewManager builds the manager joiner's controllers run in. cfg's rate
// limits are raised to the options' QPS and burst.
func NewManager(cfg *rest.Config, opts *options.Options, logger logr.Logger) (manager.Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("validating options: %w", err)
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(opts.KubeClientQPS)
	cfg.Burst = opts.KubeClientBurst
	cfg.UserAgent = "joiner"
	// Leader election keeps a limiter of its own, so a lease renewal never
	// waits behind a burst's writes.
	leaderElectionCfg := rest.CopyConfig(cfg)
	// Every other client shares one token bucket. Without it client-go
	// gives each REST client (controller-runtime makes one per resource,
	// the event writer its own) a limiter of its own, and
	// KUBE_CLIENT_QPS bounds each of them rather than joiner: a
	// 10,000-pod load run sent 292 requests/s against a QPS of 200.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)

	metricsOpts := metricsserver.Options{BindAddress: bindAddress(opts.MetricsPort)}
	if opts.EnableProfiling {
		metricsOpts.ExtraHandlers = profilingHandlers()
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        bindAddress(opts.HealthProbePort),
		LeaderElection:                !opts.DisableLeaderElection,
		LeaderElectionConfig:          leaderElectionCfg,
		LeaderElectionID:              opts.LeaderElectionName,
		LeaderElectionNamespace:       leaderElectionNamespace(opts.LeaderElectionNamespace),
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(10 * time.Second),
		Controller: config.Controller{
			// Controllers that set no concurrency of their own run one
			// worker per core the container requests (CPU_REQUESTS).
			MaxConcurrentReconciles: max(1, opts.CPURequests/1000),
			EnableWarmup:            ptr.To(!opts.DisableControllerWarmup),
		},
		// The cache holds every pod and node of the cluster, the bulk of
		// joiner's memory: it keeps only what joiner reads.
		Cache:  state.CacheOptions(),
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: false}},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("adding readyz check: %w", err)
	}
	return mgr, nil
}

// inClusterNamespaceFile holds the namespace of the pod joiner runs in.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaderElectionNamespace resolves LEADER_ELECTION_NAMESPACE: empty means,
// as in Karpenter, the namespace joiner's pod runs in, so joiner installed
// beside Karpenter contends for the same Lease. Outside a cluster (joiner
// run, tests) there is no such namespace; kube-system, where Karpenter's
// documentation installs it, stands in.
func leaderElectionNamespace(setting string) string {
	if setting != "" {
		return setting
	}
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "kube-system"
}

// profilingHandlers are Go's pprof handlers (ENABLE_PROFILING).
func profilingHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// bindAddress turns a port into a listen address; 0 disables the server.
func bindAddress(port int) string {
	if port == 0 {
		return "0"
	}
	return net.JoinHostPort("", strconv.Itoa(port))
}
