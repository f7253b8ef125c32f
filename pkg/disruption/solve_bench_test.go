package disruption_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// BenchmarkSimulateOne is the cost of one consolidation simulation on the
// largest cluster: one node removed, its pods pending (cpu-s/op: the
// process's CPU time, comparable on a loaded machine where ns/op is not).
func BenchmarkSimulateOne(b *testing.B) {
	c := loadCluster(b, "diverse-10000")
	snap := c.Snapshot(benchNow)
	var victim int
	for i, n := range snap.Nodes {
		if len(n.Pods) > 2 {
			victim = i
			break
		}
	}
	s := *snap
	s.Pods = snap.Nodes[victim].Pods
	s.Nodes = append(append([]*scheduling.ExistingNode{}, snap.Nodes[:victim]...), snap.Nodes[victim+1:]...)
	c0 := cpuTime()
	for b.Loop() {
		if _, err := scheduling.Solve(&s, scheduling.Options{RequirePreferences: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
}
