package disruption_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func budget(nodes string, reasons ...v1.DisruptionReason) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: nodes, Reasons: reasons}} }
}

func replacementTypes(cmd *disruption.Command) []string {
	var out []string
	for _, r := range cmd.Replacements {
		out = append(out, r.InstanceTypes[0].Name)
	}
	return out
}

// TestMethods checks which method acts first and what its command is.
func TestMethods(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pool  *v1.NodePool
		nodes []node
		opts  disruption.Options
		pause map[string]string
		// want is the method ("" for no command), the candidates (sorted)
		// and the cheapest type of each replacement.
		want         disruption.Method
		candidates   []string
		replacements []string
		// verdict: node → substring of its Unconsolidatable or Drift.
		verdict map[string]string
		// backedOff are instance types the NodePool's launches are
		// waiting on (a launch back-off, as the provisioner's snapshot has).
		backedOff []string
	}{
		{
			name:  "emptiness takes every empty node at once",
			nodes: []node{{name: "a", it: "c4"}, {name: "b", it: "c8", pods: []*corev1.Pod{pod("d", "1", daemon)}}, {name: "c", it: "c2", pods: []*corev1.Pod{pod("p", "1500m")}}},
			want:  disruption.MethodEmptiness, candidates: []string{"a", "b"},
		},
		{
			name:  "empty nodes and an underutilized one go in one command",
			nodes: []node{{name: "a", it: "c4"}, {name: "b", it: "c8", pods: []*corev1.Pod{pod("d", "1", daemon)}}, {name: "c", it: "c2", pods: []*corev1.Pod{pod("p", "1")}}},
			want:  disruption.MethodMultiNode, candidates: []string{"a", "b", "c"}, replacements: []string{"c1"},
		},
		{
			name:  "emptiness within the budget, dearest first",
			pool:  pool(budget("1")),
			nodes: []node{{name: "a", it: "c4"}, {name: "b", it: "c8"}},
			want:  disruption.MethodEmptiness, candidates: []string{"b"},
			verdict: map[string]string{"a": "no disruption budget left for reason Empty"},
		},
		{
			name:  "a budget for Underutilized only leaves empty nodes alone",
			pool:  pool(budget("0", v1.DisruptionReasonEmpty)),
			nodes: []node{{name: "a", it: "c4"}, {name: "b", it: "c8"}},
		},
		{
			name:  "drift before consolidation, one node with its replacement",
			nodes: []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "6")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}, {name: "b", it: "c8", pods: []*corev1.Pod{pod("q", "3")}}},
			want:  disruption.MethodDrift, candidates: []string{"a"}, replacements: []string{"c8"},
		},
		{
			// Issue 34 (upstream's "Drift NodePool Drift Taints"): the
			// NodePool change that drifted the node added a PreferNoSchedule
			// taint the pod does not tolerate; drift relaxed nothing and
			// held the node forever, where Karpenter's simulation relaxes as
			// provisioning does and replaces it.
			name: "drift relaxes a PreferNoSchedule taint the pod does not tolerate",
			pool: pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/soft", Effect: corev1.TaintEffectPreferNoSchedule}}
			}),
			nodes: []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "6")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}},
			want:  disruption.MethodDrift, candidates: []string{"a"}, replacements: []string{"c8"},
		},
		{
			name: "consolidation keeps a PreferNoSchedule taint the pod does not tolerate",
			pool: pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/soft", Effect: corev1.TaintEffectPreferNoSchedule}}
			}),
			nodes:   []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1500m")}}},
			verdict: map[string]string{"a": "did not tolerate taint example.com/soft:PreferNoSchedule"},
		},
		{
			name:  "an empty drifted node goes without replacement",
			nodes: []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("d", "1", daemon)}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}},
			pool:  pool(budget("0", v1.DisruptionReasonEmpty)),
			want:  disruption.MethodDrift, candidates: []string{"a"},
		},
		{
			name:    "drift paused: consolidation may still act",
			nodes:   []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "6")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}},
			pause:   map[string]string{"default": "replacements failed"},
			verdict: map[string]string{"a": "can't replace with a cheaper node"},
		},
		{
			name:  "multi-node: three quarter-used nodes become two small ones",
			nodes: []node{{name: "a", it: "c4", pods: []*corev1.Pod{pod("p", "1")}}, {name: "b", it: "c4", pods: []*corev1.Pod{pod("q", "1")}}, {name: "c", it: "c4", pods: []*corev1.Pod{pod("r", "1")}}},
			want:  disruption.MethodMultiNode, candidates: []string{"a", "b", "c"}, replacements: []string{"c2", "c1"},
		},
		{
			name:  "multi-node: two half-used nodes become one",
			nodes: []node{{name: "a", it: "c4", pods: []*corev1.Pod{pod("p", "1500m")}}, {name: "b", it: "c4", pods: []*corev1.Pod{pod("q", "1500m")}}},
			want:  disruption.MethodMultiNode, candidates: []string{"a", "b"}, replacements: []string{"c4"},
		},
		{
			name:  "multi-node: pods move into the room of a full-size node",
			nodes: []node{{name: "a", it: "c2", pods: []*corev1.Pod{pod("p", "1")}}, {name: "b", it: "c2", pods: []*corev1.Pod{pod("q", "1")}}, {name: "big", it: "c8", pods: []*corev1.Pod{pod("r", "5")}}},
			want:  disruption.MethodMultiNode, candidates: []string{"a", "b"},
		},
		{
			name:  "single-node: a large node for a small pod shrinks",
			nodes: []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1500m")}}},
			want:  disruption.MethodSingleNode, candidates: []string{"a"}, replacements: []string{"c2"},
		},
		{
			name:      "single-node: a backed-off type is not a replacement",
			nodes:     []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1500m")}}},
			backedOff: []string{"c2"},
			want:      disruption.MethodSingleNode, candidates: []string{"a"}, replacements: []string{"c4"},
		},
		{
			name:      "drift waits while every replacement type is backed off",
			nodes:     []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "6")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}},
			backedOff: []string{"c1", "c2", "c4", "c8"},
			verdict:   map[string]string{"a": "nodepool default is backing off launches"},
		},
		{
			name:    "never the same type again",
			nodes:   []node{{name: "a", it: "c2", pods: []*corev1.Pod{pod("p", "1500m")}}},
			verdict: map[string]string{"a": "can't replace with a cheaper node"},
		},
		{
			name:    "a replacement must save the minimum share",
			nodes:   []node{{name: "a", it: "c4", pods: []*corev1.Pod{pod("p", "1500m")}}},
			opts:    disruption.Options{MinSavingsFraction: 0.6},
			verdict: map[string]string{"a": "can't replace with a cheaper node"},
		},
		{
			name:    "no budget for Underutilized",
			pool:    pool(budget("0", v1.DisruptionReasonUnderutilized)),
			nodes:   []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1")}}},
			verdict: map[string]string{"a": "no disruption budget left for reason Underutilized"},
		},
		{
			name:    "spot to spot is off by default",
			pool:    pool(func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = nil }),
			nodes:   []node{{name: "a", it: "c8", capacityType: "spot", pods: []*corev1.Pod{pod("p", "1")}}},
			verdict: map[string]string{"a": "SpotToSpotConsolidation is disabled"},
		},
		{
			name:    "spot to spot needs 15 cheaper types",
			pool:    pool(func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = nil }),
			nodes:   []node{{name: "a", it: "c8", capacityType: "spot", pods: []*corev1.Pod{pod("p", "1")}}},
			opts:    disruption.Options{SpotToSpot: true},
			verdict: map[string]string{"a": "requires 15 cheaper instance type options"},
		},
		{
			name: "a destination that is not initialised invalidates the move",
			nodes: []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1")}}, {name: "new", it: "c8", mods: []func(*disruption.Node, *scheduling.ExistingNode){func(n *disruption.Node, en *scheduling.ExistingNode) {
				n.Initialized, en.Initialized = false, false
			}}}},
			verdict: map[string]string{"a": `would schedule against uninitialized node "new"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := tc.pool
			if np == nil {
				np = pool()
			}
			in := input(t, np, tc.nodes...)
			in.Options, in.PausedDrift = tc.opts, tc.pause
			if len(tc.backedOff) > 0 {
				in.Cluster.NodePools[0].Backoffs = []scheduling.LaunchBackoff{{What: "node class default", Phase: "Registration", Failures: 1, NextAttempt: fixtureNow.Add(time.Hour), InstanceTypes: tc.backedOff}}
			}
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Command == nil {
				if tc.want != "" {
					t.Fatalf("no command, want %s", tc.want)
				}
			} else {
				checkCommand(t, in, d)
				got := slices.Sorted(slices.Values(d.Command.Candidates))
				if d.Command.Method != tc.want || !slices.Equal(got, tc.candidates) || !slices.Equal(replacementTypes(d.Command), tc.replacements) {
					t.Fatalf("%s of %v replaced by %v, want %s of %v replaced by %v", d.Command.Method, got, replacementTypes(d.Command), tc.want, tc.candidates, tc.replacements)
				}
			}
			for name, want := range tc.verdict {
				v := verdictOf(t, d, name)
				if !strings.Contains(v.Unconsolidatable.String()+v.Drift.String(), want) {
					t.Errorf("%s: verdict %+v, want %q", name, v, want)
				}
			}
		})
	}
}

// TestLeavingPodsNeedRoom: the pods of a node being deleted need room too,
// so consolidation does not count on the room they will take.
func TestLeavingPodsNeedRoom(t *testing.T) {
	deleting := func(n *disruption.Node, en *scheduling.ExistingNode) { n.Deleting, en.MarkedForDeletion = true, true }
	for _, tc := range []struct {
		name    string
		leaving bool
		want    disruption.Method
	}{
		{name: "room is free", want: disruption.MethodSingleNode},
		{name: "room is claimed by a deleting node's pod", leaving: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pinned := withNode(func(n *disruption.Node) { n.Node.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
			nodes := []node{{name: "a", it: "c4", pods: []*corev1.Pod{pod("p", "3")}}, {name: "b", it: "c8", pods: []*corev1.Pod{pod("q", "4")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){pinned}}}
			if tc.leaving {
				nodes = append(nodes, node{name: "gone", it: "c4", pods: []*corev1.Pod{pod("r", "4")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){deleting}})
			}
			d, err := disruption.Decide(input(t, pool(), nodes...))
			if err != nil {
				t.Fatal(err)
			}
			var got disruption.Method
			var cands []string
			if d.Command != nil {
				got, cands = d.Command.Method, d.Command.Candidates
			}
			if got != tc.want {
				t.Errorf("%q of %v, want %q", got, cands, tc.want)
			}
		})
	}
}
