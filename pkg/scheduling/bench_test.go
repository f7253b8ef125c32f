package scheduling_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
			cpu := processCPU(b)
			for b.Loop() {
				plan, err = scheduling.Solve(snap, scheduling.Options{})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// CPU time per solve (GC included): on a shared machine wall
			// time varies with the load, CPU time much less.
			b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
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
			// Where the cost goes above the bound: the anti-affinity
			// share (LP+anti − LP), the per-node slack (the share of
			// each node's price its binding resource leaves idle) and
			// the rest (nodes sized by one resource while another
			// idles, zone and capacity-type pinning).
			slack := planSlack(plan)
			b.ReportMetric((bound.LPAnti-bound.LP)/bound.LPAnti, "anti/LPanti")
			b.ReportMetric(slack/bound.LPAnti, "slack/LPanti")
			b.ReportMetric((cost-bound.LPAnti-slack)/bound.LPAnti, "rest/LPanti")
		})
	}
}

// planSlack sums, over a plan's new nodes, the share of each node's price
// that its binding resource (cpu, memory or pods, whichever its requests
// use most of on its cheapest option) leaves idle.
func planSlack(p *scheduling.Plan) float64 {
	slack := 0.0
	for _, nc := range p.NewNodeClaims {
		alloc := nc.InstanceTypes[0].Allocatable()
		share := 0.0
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			a, q := alloc[r], nc.Requests[r]
			if a.Sign() > 0 {
				share = max(share, q.AsApproximateFloat64()/a.AsApproximateFloat64())
			}
		}
		slack += nc.Price * max(0, 1-share)
	}
	return slack
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
