package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestSolverOptions checks PREFERENCE_POLICY and MIN_VALUES_POLICY reach
// the solver's options, which provisioning and consolidation both use.
func TestSolverOptions(t *testing.T) {
	tests := []struct {
		name       string
		preference string
		minValues  string
		want       scheduling.Options
	}{
		{name: "defaults", preference: options.PreferencePolicyRespect, minValues: options.MinValuesPolicyStrict, want: scheduling.Options{}},
		{name: "ignore preferences", preference: options.PreferencePolicyIgnore, minValues: options.MinValuesPolicyStrict, want: scheduling.Options{IgnorePreferences: true}},
		{name: "best effort minValues", preference: options.PreferencePolicyRespect, minValues: options.MinValuesPolicyBestEffort, want: scheduling.Options{MinValuesBestEffort: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options.Default()
			o.PreferencePolicy, o.MinValuesPolicy = tt.preference, tt.minValues
			if got := SolverOptions(o); got != tt.want {
				t.Errorf("SolverOptions = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestLeaderElectionNamespace: an explicit namespace wins; empty is the
// pod's namespace in a cluster and kube-system outside one (tests run
// outside, where the service account file does not exist).
func TestLeaderElectionNamespace(t *testing.T) {
	if got := leaderElectionNamespace("karpenter"); got != "karpenter" {
		t.Errorf("explicit namespace = %q", got)
	}
	if got := leaderElectionNamespace(""); got != "kube-system" {
		t.Errorf("outside a cluster = %q, want kube-system", got)
	}
	if d := options.Default(); d.LeaderElectionName != "karpenter-leader-election" {
		t.Errorf("default lease %q, want Karpenter's", d.LeaderElectionName)
	}
}

// TestLoggerToPaths checks LOG_OUTPUT_PATHS: logs land in every listed
// sink, at the level asked.
func TestLoggerToPaths(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	logger, err := NewLoggerToPaths("info", a+","+b, "stderr")
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("created nodeclaim", "nodeclaim", "default-1")
	logger.V(1).Info("debug line")
	for _, p := range []string{a, b} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), `"message":"created nodeclaim"`) || strings.Contains(string(got), "debug line") {
			t.Errorf("%s holds %q", p, got)
		}
	}
	if _, err := NewLoggerToPaths("info", filepath.Join(dir, "missing", "x.log"), "stderr"); err == nil || !strings.Contains(err.Error(), "log-output-paths") {
		t.Errorf("unwritable path: %v, want an error naming log-output-paths", err)
	}
}

// TestClientsShareOneRateLimit: KUBE_CLIENT_QPS and KUBE_CLIENT_BURST bound
// joiner as a whole, so every client built from the manager's config
// shares one token bucket at those rates.
func TestClientsShareOneRateLimit(t *testing.T) {
	o := options.Default()
	o.KubeClientQPS, o.KubeClientBurst = 37, 41
	o.DisableLeaderElection = true
	o.MetricsPort, o.HealthProbePort = 0, 0
	mgr, err := NewManager(test.Env(t).Config, o, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	cfg := mgr.GetConfig()
	if cfg.RateLimiter == nil {
		t.Fatal("the manager's config has no shared rate limiter: each client would get its own")
	}
	if got := cfg.RateLimiter.QPS(); got != 37 {
		t.Errorf("shared limiter QPS %v, want KUBE_CLIENT_QPS 37", got)
	}
	if a, b := rest.CopyConfig(cfg).RateLimiter, cfg.RateLimiter; a != b {
		t.Error("a copy of the config does not share the limiter")
	}
}
