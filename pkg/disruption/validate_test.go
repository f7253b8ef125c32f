package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestValidate decides on one cluster, changes it, and re-checks the
// command as the controller does 15 s later.
func TestValidate(t *testing.T) {
	consolidation := func() []node {
		return []node{{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1500m")}}}
	}
	emptiness := func() []node { return []node{{name: "a", it: "c4"}, {name: "b", it: "c4"}} }
	repack := func() []node {
		return []node{{name: "a", it: "c4", pods: []*corev1.Pod{pod("p", "1")}}, {name: "b", it: "c4", pods: []*corev1.Pod{pod("q", "1")}}, {name: "c", it: "c4", pods: []*corev1.Pod{pod("r", "1")}}}
	}
	for _, tc := range []struct {
		name   string
		nodes  func() []node
		method disruption.Method
		change func(*disruption.Input)
		// want is a substring of the error, "" for a valid command.
		want string
	}{
		{name: "nothing changed", nodes: consolidation, method: disruption.MethodSingleNode},
		{name: "empty nodes still empty", nodes: emptiness, method: disruption.MethodEmptiness},
		{name: "a repack into two nodes still holds", nodes: repack, method: disruption.MethodMultiNode},
		{
			name: "a repack no longer pays", nodes: repack, method: disruption.MethodMultiNode,
			change: func(in *disruption.Input) {
				for i := range in.Nodes {
					in.Nodes[i].Pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resourceQuantity("3500m")
				}
			},
			want: "re-simulation",
		},
		{
			name: "a pod asks not to be disrupted", nodes: consolidation, method: disruption.MethodSingleNode,
			change: func(in *disruption.Input) {
				in.Nodes[0].Pods[0].Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
			},
			want: `candidate "a" is no longer valid: pod has "karpenter.sh/do-not-disrupt" annotation`,
		},
		{
			name: "a PDB now forbids eviction", nodes: consolidation, method: disruption.MethodSingleNode,
			change: func(in *disruption.Input) {
				in.PDBs = []*policyv1.PodDisruptionBudget{pdb("web", 0, map[string]string{"app": "p"})}
			},
			want: "pdb prevents pod evictions",
		},
		{
			name: "the budget closed", nodes: consolidation, method: disruption.MethodSingleNode,
			change: func(in *disruption.Input) { budget("0")(in.NodePools["default"]) },
			want:   "no disruption budget left for reason Underutilized",
		},
		{
			name: "an empty node got a pod", nodes: emptiness, method: disruption.MethodEmptiness,
			change: func(in *disruption.Input) {
				p := pod("late", "1")
				p.Spec.NodeName = "a"
				in.Nodes[0].Pods = append(in.Nodes[0].Pods, p)
				in.Cluster.Nodes[0].Pods = in.Nodes[0].Pods
			},
			want: `candidate "a" is no longer empty`,
		},
		{
			name: "the pod grew and no cheaper node holds it", nodes: consolidation, method: disruption.MethodSingleNode,
			change: func(in *disruption.Input) {
				in.Nodes[0].Pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resourceQuantity("7")
			},
			want: "re-simulation",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, pool(), tc.nodes()...)
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Command == nil || d.Command.Method != tc.method {
				t.Fatalf("decided %+v, want a %s command", d.Command, tc.method)
			}
			later := input(t, pool(), tc.nodes()...)
			if tc.change != nil {
				tc.change(later)
			}
			err = disruption.Validate(d.Command, later)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAllowedDisruptions: the budget applies to the pool's initialised
// nodes, less those NotReady, deleting or already disrupting.
func TestAllowedDisruptions(t *testing.T) {
	busy := func(f func(*disruption.Node)) []func(*disruption.Node, *scheduling.ExistingNode) {
		return []func(*disruption.Node, *scheduling.ExistingNode){withNode(f)}
	}
	nodes := []node{
		{name: "a", it: "c2"}, {name: "b", it: "c2"}, {name: "c", it: "c2"}, {name: "d", it: "c2"}, {name: "e", it: "c2"},
		{name: "f", it: "c2", mods: busy(func(n *disruption.Node) { n.NotReady = true })},
		{name: "g", it: "c2", mods: busy(func(n *disruption.Node) { n.Deleting = true })},
		{name: "h", it: "c2", mods: busy(func(n *disruption.Node) { n.Disrupting = true })},
		{name: "i", it: "c2", mods: busy(func(n *disruption.Node) { n.Initialized = false })},
	}
	for _, tc := range []struct {
		name    string
		budgets []v1.Budget
		want    map[v1.DisruptionReason]int
	}{
		{name: "default 10% of 8 rounds up to 1, less 3 busy", want: map[v1.DisruptionReason]int{v1.DisruptionReasonEmpty: 0, v1.DisruptionReasonDrifted: 0, v1.DisruptionReasonUnderutilized: 0}},
		{name: "50% is 4, less 3", budgets: []v1.Budget{{Nodes: "50%"}}, want: map[v1.DisruptionReason]int{v1.DisruptionReasonEmpty: 1, v1.DisruptionReasonDrifted: 1, v1.DisruptionReasonUnderutilized: 1}},
		{
			name:    "per reason",
			budgets: []v1.Budget{{Nodes: "5"}, {Nodes: "3", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}},
			want:    map[v1.DisruptionReason]int{v1.DisruptionReasonEmpty: 2, v1.DisruptionReasonDrifted: 0, v1.DisruptionReasonUnderutilized: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool(func(np *v1.NodePool) { np.Spec.Disruption.Budgets = tc.budgets })
			d, err := disruption.Decide(input(t, np, nodes...))
			if err != nil {
				t.Fatal(err)
			}
			for r, want := range tc.want {
				if got := d.Allowed["default"][r]; got != want {
					t.Errorf("%s: %d, want %d", r, got, want)
				}
			}
		})
	}
}
