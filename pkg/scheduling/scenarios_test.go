package scheduling_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestSharedScenarioInvariants solves every shared scenario and checks the
// plan's invariants, that nothing is left unschedulable (the files are all
// schedulable) and that solving twice gives the same plan.
func TestSharedScenarioInvariants(t *testing.T) {
	names := benchScenarios
	if testing.Short() {
		names = []string{"diverse-100", "diverse-1000"}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			snap := loadShared(t, name)
			plan, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, snap, plan)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("%d pods unschedulable; first: %v", len(plan.Unschedulable), plan.Unschedulable[0].NodePools)
			}
			again, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := planText(plan), planText(again); a != b {
				t.Errorf("two solves of the same snapshot differ")
			}
		})
	}
}
