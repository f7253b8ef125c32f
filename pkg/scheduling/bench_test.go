package scheduling_test

import (
	"path/filepath"
	"testing"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// upstream is Karpenter's cost per hour on the shared scenarios (from the
// scenarios README), for the ratio column.
var upstream = map[string]float64{
	"diverse-100":   32.89,
	"diverse-1000":  342.76,
	"diverse-5000":  1743.08,
	"diverse-10000": 3505.20,
	"generic-5000":  1401.57,
}

var benchScenarios = []string{"diverse-100", "diverse-1000", "diverse-5000", "diverse-10000", "generic-5000"}

func loadShared(tb testing.TB, name string) *scheduling.Snapshot {
	tb.Helper()
	dir, err := scenario.Dir()
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := scenario.LoadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	return sc.Snapshot
}

// BenchmarkSolve solves every shared scenario and reports, beside time and
// allocations, the plan's node count and $/hour and its ratio to the LP
// lower bound (LP+anti where anti-affinity forces distinct nodes) and to
// upstream Karpenter's cost.
func BenchmarkSolve(b *testing.B) {
	for _, name := range benchScenarios {
		b.Run(name, func(b *testing.B) {
			snap := loadShared(b, name)
			bound, err := lowerbound.Compute(snap, scheduling.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var plan *scheduling.Plan
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				plan, err = scheduling.Solve(snap, scheduling.Options{})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cost, err := lowerbound.PlanCost(plan)
			if err != nil {
				b.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				b.Errorf("%d pods unschedulable, first: %v", len(plan.Unschedulable), plan.Unschedulable[0].NodePools)
			}
			b.ReportMetric(float64(len(snap.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.NewNodeClaims)), "nodes")
			b.ReportMetric(cost, "$/h")
			b.ReportMetric(cost/bound.LP, "xLP")
			b.ReportMetric(cost/bound.LPAnti, "xLPanti")
			b.ReportMetric(cost/upstream[name], "xUpstream")
		})
	}
}
