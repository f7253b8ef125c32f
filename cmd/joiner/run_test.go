package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/operator/options"
)

// TestRunDemo runs `joiner run --exit-after-demo` from start to end: the
// control plane, joiner with the simulated cloud, the scale-up of the
// example Deployment, and the scale-down after which joiner itself
// deletes the emptied NodeClaims, saying why.
func TestRunDemo(t *testing.T) {
	settings := options.Default()
	settings.DisableLeaderElection = true
	settings.MetricsPort, settings.HealthProbePort = 0, 0
	settings.ClusterName = "joiner-run-test"
	settings.StatusPage, settings.StatusPageAddress = true, "127.0.0.1:0"
	var out bytes.Buffer
	start := time.Now()
	err := runDemo(t.Context(), &runOptions{
		settings:      settings,
		runDir:        t.TempDir() + "/run",
		replicas:      20,
		exitAfterDemo: true,
		timeout:       2 * time.Minute,
		out:           &out,
	})
	t.Logf("joiner run output (%.1fs):\n%s", time.Since(start).Seconds(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"status page: http://127.0.0.1:",
		"20 pending (unschedulable)",
		"created for nodepool default",
		"launched:",
		"registered:",
		"initialized:",
		"all 20 pods running",
		"deleting (reason Empty: emptiness",
		"gone: instance",
		"scale-down done",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
