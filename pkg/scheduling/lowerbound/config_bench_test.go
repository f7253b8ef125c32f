package lowerbound_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// BenchmarkConfigurations computes the configuration-LP bound of every
// shared scenario beside the resource LP bounds, solves it, and reports the
// plan's cost as a ratio of each bound and where the cost above the
// configuration bound goes: what each node costs above its pods' prices at
// the bound's duals, summed over the nodes that hold a required hostname
// anti-affinity pod, the nodes that hold pods pinned to a zone by zone
// pod affinity or zone spread, and the rest; plus the bound's own slack
// (the master's value above the bound when the generation stops short).
//
// The consolidation clusters (name.half) are the pods left on each shared
// half-emptied cluster, all pending on no node, as pkg/disruption's
// benchmark bounds them: only the bounds are reported for them.
func BenchmarkConfigurations(b *testing.B) {
	for _, name := range []string{"diverse-100", "diverse-1000", "diverse-5000", "diverse-10000", "generic-5000",
		"diverse-1000.half", "diverse-5000.half", "diverse-10000.half"} {
		b.Run(name, func(b *testing.B) {
			var snap *scheduling.Snapshot
			half := strings.HasSuffix(name, ".half")
			if half {
				snap = halfClusterPods(b, strings.TrimSuffix(name, ".half"))
			} else {
				snap = sharedScenario(b, name).Snapshot
			}
			lp, err := lowerbound.Compute(snap, scheduling.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var cb lowerbound.ConfigBound
			cpu := processCPU(b)
			for b.Loop() {
				if cb, err = lowerbound.Configurations(snap, scheduling.Options{}, lowerbound.ConfigLimits{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(cb.Value, "config$/h")
			b.ReportMetric(cb.LP, "master$/h")
			b.ReportMetric(lp.LP, "LP$/h")
			b.ReportMetric(lp.LPAnti, "LPanti$/h")
			conv := 0.0
			if cb.Converged {
				conv = 1
			}
			b.ReportMetric(conv, "converged")
			b.ReportMetric(float64(cb.Iterations), "iterations")
			if half {
				return
			}
			plan, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				b.Fatal(err)
			}
			cost, err := lowerbound.PlanCost(plan)
			if err != nil {
				b.Fatal(err)
			}
			bound := max(cb.Value, lp.LPAnti)
			b.ReportMetric(cost, "plan$/h")
			b.ReportMetric(cost/lp.LP, "xLP")
			b.ReportMetric(cost/lp.LPAnti, "xLPanti")
			b.ReportMetric(cost/cb.Value, "xConfig")
			anti, zone, rest := 0.0, 0.0, 0.0
			for _, nc := range plan.NewNodeClaims {
				price, _ := lowerbound.NodeCost(nc, plan.ListPrices)
				waste := price
				kind := &rest
				for _, p := range nc.Pods {
					waste -= cb.Duals[p]
					switch {
					case hostnameAnti(p):
						kind = &anti
					case kind != &anti && zonePinned(p):
						kind = &zone
					}
				}
				*kind += waste
			}
			b.ReportMetric(anti/bound, "waste-anti/bound")
			b.ReportMetric(zone/bound, "waste-zone/bound")
			b.ReportMetric(rest/bound, "waste-rest/bound")
			b.ReportMetric((cb.LP-cb.Value)/bound, "boundslack/bound")
		})
	}
}

func hostnameAnti(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == corev1.LabelHostname {
			return true
		}
	}
	return false
}

func zonePinned(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelTopologyZone {
				return true
			}
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelTopologyZone && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}

// processCPU is the process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// halfClusterPods is the shared half-emptied consolidation cluster of
// scenario name (scenario.LoadHalfCluster) as a provisioning Snapshot
// (Cluster.PendingSnapshot): its NodePool and types, every pod still
// running pending, no nodes.
func halfClusterPods(tb testing.TB, name string) *scheduling.Snapshot {
	tb.Helper()
	c, err := scenario.LoadHalfCluster(name)
	if err != nil {
		tb.Fatal(err)
	}
	return c.PendingSnapshot(time.Time{})
}
