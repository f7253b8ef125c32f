package disruption_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func static(replicas int64) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Replicas = &replicas }
}

func staticInput(t *testing.T, np *v1.NodePool, nodes ...node) *disruption.Input {
	in := input(t, np, nodes...)
	in.InstanceTypes = map[string][]*scheduling.InstanceType{np.Name: catalog()}
	return in
}

// TestStaticNodePoolsAreNeverConsolidated: an empty or underused node of a
// static NodePool is no candidate for emptiness or consolidation, and
// says why.
func TestStaticNodePoolsAreNeverConsolidated(t *testing.T) {
	np := pool(static(2))
	in := staticInput(t, np, node{name: "a", it: "c8"}, node{name: "b", it: "c8", pods: []*corev1.Pod{pod("p", "1")}})
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Command != nil {
		t.Fatalf("static NodePool's nodes got a %s command", d.Command.Method)
	}
	for _, name := range []string{"a", "b"} {
		if v := verdictOf(t, d, name); !strings.Contains(v.Unconsolidatable.String(), "is static (spec.replicas)") || v.Candidate {
			t.Errorf("node %s: verdict %+v, want an Unconsolidatable static verdict", name, v)
		}
	}
}

// TestStaticDrift: a drifted node of a static NodePool is replaced by a
// fresh NodeClaim from the template (no simulation), one at a time,
// unless the pool is scaling down, at its node limit or out of budget.
func TestStaticDrift(t *testing.T) {
	driftedNode := func(name string) node {
		return node{name: name, it: "c4", pods: []*corev1.Pod{pod(name+"-p", "3")}, mods: []func(*disruption.Node, *scheduling.ExistingNode){withNode(drifted)}}
	}
	for _, tc := range []struct {
		name     string
		np       *v1.NodePool
		nodes    []node
		want     bool
		whyNot   string
		wantType string
	}{
		{name: "replaced from the template", np: pool(static(2)), nodes: []node{driftedNode("a"), {name: "b", it: "c4"}}, want: true, wantType: "c1"},
		{name: "template requirements pick the types", np: pool(static(1), func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c8", "c4"}})
		}), nodes: []node{driftedNode("a")}, want: true, wantType: "c4"},
		{name: "not while scaling down", np: pool(static(1)), nodes: []node{driftedNode("a"), {name: "b", it: "c4"}}, whyNot: "scaling down to 1 replicas"},
		{name: "not over limits.nodes", np: pool(static(2), func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{v1.ResourceNodes: resource.MustParse("2")} }),
			nodes: []node{driftedNode("a"), {name: "b", it: "c4"}}, whyNot: "at its limits.nodes 2"},
		{name: "within the Drifted budget", np: pool(static(2), func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} }),
			nodes: []node{driftedNode("a"), {name: "b", it: "c4"}}, whyNot: "no disruption budget left for reason Drifted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := disruption.Decide(staticInput(t, tc.np, tc.nodes...))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want {
				if d.Command != nil {
					t.Fatalf("got a %s command, want none", d.Command.Method)
				}
				if v := verdictOf(t, d, "a"); !strings.Contains(v.Drift.String(), tc.whyNot) {
					t.Fatalf("drift verdict %q, want it to contain %q", v.Drift.String(), tc.whyNot)
				}
				return
			}
			cmd := d.Command
			if cmd == nil || cmd.Method != disruption.MethodStaticDrift || cmd.Reason != disruption.ReasonDrifted || !slices.Equal(cmd.Candidates, []string{"a"}) {
				t.Fatalf("command %+v, want static-drift of a", cmd)
			}
			if len(cmd.Replacements) != 1 || len(cmd.Replacements[0].Pods) != 0 || cmd.Replacements[0].InstanceTypes[0].Name != tc.wantType {
				t.Fatalf("replacements %+v, want one podless NodeClaim whose cheapest type is %s", cmd.Replacements, tc.wantType)
			}
			// Drift commands are not re-validated after a wait, but a
			// fresh Validate must agree.
			if err := disruption.Validate(cmd, staticInput(t, tc.np, tc.nodes...)); err != nil {
				t.Fatalf("validate: %v", err)
			}
		})
	}
}

// TestScaleDownOrder is Karpenter's static scale-down order.
func TestScaleDownOrder(t *testing.T) {
	unlaunched := withNode(func(n *disruption.Node) { n.Node = nil })
	deleting := withNode(func(n *disruption.Node) { n.Deleting = true })
	np := pool(static(0))
	in := input(t, np,
		node{name: "busy", it: "c4", pods: []*corev1.Pod{pod("p1", "1"), pod("p2", "1")}},
		node{name: "light", it: "c4", pods: []*corev1.Pod{pod("p3", "1")}},
		node{name: "pinned", it: "c4", pods: []*corev1.Pod{pod("p4", "1", annotated(v1.AnnotationDoNotDisrupt, "true"))}},
		node{name: "empty", it: "c4", pods: []*corev1.Pod{pod("d", "1", daemon)}},
		node{name: "new", it: "c4", mods: []func(*disruption.Node, *scheduling.ExistingNode){unlaunched}},
		node{name: "going", it: "c4", mods: []func(*disruption.Node, *scheduling.ExistingNode){deleting}},
	)
	got := disruption.ScaleDownOrder(in.Nodes, np.Name, fixtureNow)
	want := []string{"new", "empty", "light", "busy", "pinned"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if c := disruption.CountStatic(in.Nodes, np.Name); c != (disruption.StaticCount{Active: 5, Deleting: 1}) {
		t.Fatalf("count %+v, want 5 active and 1 deleting", c)
	}
}
