package disruption_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/joiner-dev/joiner/pkg/disruption"
)

// TestAgainstBruteForce compares the engine's first command with every
// command any subset of candidates could make, on small random clusters
// without empty nodes (emptiness would act first, by Karpenter's order):
// the engine must act whenever some command saves money, and its command
// must save at least half of the best one.
func TestAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	types := []string{"c1", "c2", "c4", "c8"}
	sizes := []string{"250m", "500m", "1", "1500m", "3"}
	total, ratio := 0, 0.0
	for i := range 200 {
		var nodes []node
		for j := range 2 + rng.Intn(4) {
			n := node{name: fmt.Sprintf("n%d", j), it: types[1+rng.Intn(3)]}
			for k := range 1 + rng.Intn(3) {
				n.pods = append(n.pods, pod(fmt.Sprintf("p%d-%d", j, k), sizes[rng.Intn(len(sizes))]))
			}
			nodes = append(nodes, n)
		}
		in := input(t, pool(), nodes...)
		if !fits(in) {
			continue // a node overcommitted by the random pods: not a real cluster
		}
		best, err := disruption.BestCommand(in)
		if err != nil {
			t.Fatal(err)
		}
		d, err := disruption.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case best > 0 && d.Command == nil:
			t.Errorf("cluster %d: no command, but one saves $%.2f/h", i, best)
			for _, n := range nodes {
				var pods []string
				for _, p := range n.pods {
					pods = append(pods, p.Spec.Containers[0].Resources.Requests.Cpu().String())
				}
				t.Logf("  %s %s %v", n.name, n.it, pods)
			}
			for _, v := range d.Verdicts {
				t.Logf("  %+v", v)
			}
		case d.Command != nil:
			checkCommand(t, in, d)
			if best > 0 {
				total++
				ratio += d.Command.SavingsPerHour / best
				if d.Command.SavingsPerHour < best/2 {
					t.Errorf("cluster %d: %s saves $%.2f/h, the best command $%.2f/h", i, d.Command.Method, d.Command.SavingsPerHour, best)
				}
			}
		}
	}
	if total < 50 {
		t.Fatalf("only %d clusters had a command to compare", total)
	}
	t.Logf("%d clusters: the engine's first command saves %.0f%% of the best on average", total, 100*ratio/float64(total))
}

// fits reports whether every node's pods fit its allocatable.
func fits(in *disruption.Input) bool {
	for _, n := range in.Cluster.Nodes {
		var cpu int64
		for _, p := range n.Pods {
			cpu += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
		if cpu > n.Allocatable.Cpu().MilliValue() {
			return false
		}
	}
	return true
}
