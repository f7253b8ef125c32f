package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/operator/options"
	"github.com/joiner-dev/joiner/pkg/scheduling"
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
