package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Single-node consolidation simulates a candidate only when the estimate
// (its pods first-fit into the other nodes' room, the rest onto the
// cheapest type that holds them) saves at least the minimum share of its
// price; the others are skipped without a simulation. In every row two
// c2 nodes with 1 cpu free each may not be disrupted, so the candidate is
// the only one, multi-node has nothing to try, and every solve counted is
// single-node's simulation of the candidate.
func TestSingleNodeEstimateFilter(t *testing.T) {
	keep := withNode(func(n *disruption.Node) { n.Node.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	for _, tc := range []struct {
		name       string
		candidate  node
		minSavings float64
		// simulated: the candidate was simulated (one solve) rather than
		// skipped (none).
		simulated    bool
		want         disruption.Method
		replacements []string
	}{
		{
			name:      "its pods first-fit into another node's room: simulated and deleted",
			candidate: node{name: "a", it: "c2", pods: []*corev1.Pod{pod("p", "1")}},
			simulated: true, want: disruption.MethodSingleNode,
		},
		{
			name:      "what the room cannot hold fits a type cheaper by the minimum share: simulated and replaced",
			candidate: node{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "3")}},
			simulated: true, want: disruption.MethodSingleNode, replacements: []string{"c4"},
		},
		{
			name:       "the estimate saves exactly the minimum share: simulated",
			candidate:  node{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "3")}},
			minSavings: 0.5,
			simulated:  true, want: disruption.MethodSingleNode, replacements: []string{"c4"},
		},
		{
			// The necessary conditions pass (1.5 cpu fit in the 2 cpu the
			// other nodes have free in total); no single node has room.
			name:      "its pods fit the other nodes' room only in total: skipped without a simulation",
			candidate: node{name: "a", it: "c2", pods: []*corev1.Pod{pod("p", "1500m")}},
		},
		{
			// The necessary conditions pass (the 1 cpu the room cannot
			// hold fits a c1, under 40% of the price); the estimate's c4
			// saves 50%, less than the 60% asked.
			name:       "the estimate saves less than the minimum share: skipped without a simulation",
			candidate:  node{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "3")}},
			minSavings: 0.6,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, pool(), tc.candidate,
				node{name: "r1", it: "c2", pods: []*corev1.Pod{pod("k1", "1")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){keep}},
				node{name: "r2", it: "c2", pods: []*corev1.Pod{pod("k2", "1")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){keep}},
			)
			solves := 0
			in.Options.MinSavingsFraction = tc.minSavings
			in.Options.Solve = func(s *scheduling.Snapshot, o scheduling.Options) (*scheduling.Plan, error) {
				solves++
				return scheduling.Solve(s, o)
			}
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.simulated]; solves != want {
				t.Errorf("%d simulations, want %d", solves, want)
			}
			if d.Command == nil {
				if tc.want != "" {
					t.Fatalf("no command, want %s", tc.want)
				}
				if why := verdictOf(t, d, "a").Unconsolidatable; why.Kind != disruption.WhyNotCheaper {
					t.Errorf("candidate's verdict %q (%s), want %s", why.String(), why.Kind, disruption.WhyNotCheaper)
				}
				return
			}
			if d.Command.Method != tc.want || !slices.Equal(d.Command.Candidates, []string{"a"}) || !slices.Equal(replacementTypes(d.Command), tc.replacements) {
				t.Errorf("command %s %v → %v, want %s [a] → %v", d.Command.Method, d.Command.Candidates, replacementTypes(d.Command), tc.want, tc.replacements)
			}
		})
	}
}
