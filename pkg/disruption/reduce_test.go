package disruption_test

import (
	"fmt"
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

// TestDecideIsDeterministic: the same Input gives the same command, round
// after round of a real cluster.
func TestDecideIsDeterministic(t *testing.T) {
	c := loadCluster(t, "diverse-1000")
	for round := range 6 {
		in := c.Input(benchNow, disruption.Options{})
		a, err := disruption.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := disruption.Decide(c.Input(benchNow, disruption.Options{}))
		if err != nil {
			t.Fatal(err)
		}
		if a.Command == nil || b.Command == nil {
			t.Fatalf("round %d: no command", round)
		}
		if got, want := fmt.Sprint(b.Command.Candidates, replacementTypes(b.Command), b.Command.SavingsPerHour), fmt.Sprint(a.Command.Candidates, replacementTypes(a.Command), a.Command.SavingsPerHour); got != want {
			t.Fatalf("round %d: %s, then %s", round, want, got)
		}
		if err := c.Apply(a.Command); err != nil {
			t.Fatal(err)
		}
	}
}
