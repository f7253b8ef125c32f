package disruption_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/disruption"
)

// TestReducedSimulationAgrees checks the snapshot reduction against the
// whole snapshot on every candidate of a real cluster, after a few rounds
// of consolidation have packed it: the same verdict (delete, replace or
// fail) for each.
func TestReducedSimulationAgrees(t *testing.T) {
	c := loadCluster(t, "diverse-1000")
	converge(t, c, disruption.Options{}, 4)
	in := c.Input(benchNow, disruption.Options{})
	full, err := disruption.SimulateEach(in, true)
	if err != nil {
		t.Fatal(err)
	}
	reduced, err := disruption.SimulateEach(in, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) < 50 {
		t.Fatalf("only %d candidates simulated", len(full))
	}
	differ := 0
	for name, want := range full {
		if got := reduced[name]; got != want {
			differ++
			t.Errorf("%s: reduced %q, whole %q", name, got, want)
		}
	}
	t.Logf("%d candidates, %d differ", len(full), differ)
}
