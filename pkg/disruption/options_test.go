package disruption_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func anyCapacityType(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = nil }

func capacityTypes(r *scheduling.NewNodeClaim) []string {
	for _, req := range r.Requirements {
		if req.Key == v1.LabelCapacityType {
			return req.Values
		}
	}
	return nil
}

// TestSpotToSpot: with the gate on and at least 15 cheaper spot types, a
// spot node is replaced by a spot node offered as the 15 cheapest types.
func TestSpotToSpot(t *testing.T) {
	in := input(t, pool(anyCapacityType), node{name: "a", it: "c8", capacityType: "spot", pods: []*corev1.Pod{pod("p", "500m")}})
	its := []*scheduling.InstanceType{instanceType("c8", 8, 8)}
	for i := range 20 {
		its = append(its, instanceType(fmt.Sprintf("s%02d", i), 1, 1+float64(i)/10))
	}
	in.Cluster.InstanceTypes["default"] = its
	in.Options.SpotToSpot = true
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Command == nil || d.Command.Method != disruption.MethodSingleNode {
		t.Fatalf("command %+v, verdict %+v", d.Command, d.Verdicts[0])
	}
	checkCommand(t, in, d)
	r := d.Command.Replacements[0]
	if len(r.InstanceTypes) != 15 || r.InstanceTypes[0].Name != "s00" {
		t.Errorf("%d launch options from %s, want the 15 cheapest", len(r.InstanceTypes), r.InstanceTypes[0].Name)
	}
	if ct := capacityTypes(r); len(ct) != 1 || ct[0] != "spot" {
		t.Errorf("capacity types %v, want spot", ct)
	}
}

// TestOnDemandToSpotIsPinned: an on-demand node whose replacement may be
// spot or on-demand is priced, and pinned, as spot.
func TestOnDemandToSpotIsPinned(t *testing.T) {
	in := input(t, pool(anyCapacityType), node{name: "a", it: "c8", pods: []*corev1.Pod{pod("p", "1500m")}})
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Command == nil {
		t.Fatalf("no command: %+v", d.Verdicts[0])
	}
	checkCommand(t, in, d)
	r := d.Command.Replacements[0]
	if ct := capacityTypes(r); len(ct) != 1 || ct[0] != "spot" || r.Price != 1 {
		t.Errorf("replacement %s at $%v as %v, want c2 spot at $1", r.InstanceTypes[0].Name, r.Price, ct)
	}
}

// TestPreferencesHeldDuringConsolidation: a pod that prefers its node's
// label does not move to a node without it, even with room there.
func TestPreferencesHeldDuringConsolidation(t *testing.T) {
	gold := func(_ *disruption.Node, en *scheduling.ExistingNode) {
		labels := map[string]string{"tier": "gold"}
		for k, v := range en.Labels {
			labels[k] = v
		}
		en.Labels = labels
	}
	prefersGold := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold"}}}},
		}}}}
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		moves bool
	}{
		{name: "a plain pod moves", pod: pod("p", "1"), moves: true},
		{name: "a pod preferring gold stays", pod: pod("p", "1", prefersGold)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, pool(), node{name: "a", it: "c2", pods: []*corev1.Pod{tc.pod}, mods: []func(*disruption.Node, *scheduling.ExistingNode){gold}},
				node{name: "b", it: "c8", pods: []*corev1.Pod{pod("q", "7")}})
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			moved := d.Command != nil && len(d.Command.Candidates) == 1 && d.Command.Candidates[0] == "a" && len(d.Command.Replacements) == 0
			if moved != tc.moves {
				t.Errorf("command %+v, want a's pod moved: %v (verdict %+v)", d.Command, tc.moves, d.Verdicts[0])
			}
		})
	}
}

// TestReplacementCarriesDaemonOverhead: a replacement is sized for the
// DaemonSet pods that will land on it too.
func TestReplacementCarriesDaemonOverhead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		daemonSet bool
		want      string
	}{
		{name: "without DaemonSets", want: "c2"},
		{name: "with a DaemonSet", daemonSet: true, want: "c4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*corev1.Pod{pod("p", "1600m")}
			if tc.daemonSet {
				pods = append(pods, pod("agent-a", "500m", daemon))
			}
			in := input(t, pool(), node{name: "a", it: "c8", pods: pods})
			if tc.daemonSet {
				in.Cluster.DaemonSets = []*corev1.Pod{pod("agent", "500m", daemon)}
			}
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Command == nil || len(d.Command.Replacements) != 1 {
				t.Fatalf("command %+v, verdict %+v", d.Command, d.Verdicts[0])
			}
			checkCommand(t, in, d)
			if got := d.Command.Replacements[0].InstanceTypes[0].Name; got != tc.want {
				t.Errorf("replacement %s, want %s", got, tc.want)
			}
		})
	}
}

// TestBalancedPolicy: a Balanced NodePool consolidates only when the
// command's share of the pool's savings is at least half its share of the
// pool's disruption.
func TestBalancedPolicy(t *testing.T) {
	balancedPool := pool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced })
	many := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, pod(fmt.Sprintf("w%d", i), "100m"))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		nodes []node
		want  bool
	}{
		{
			// deleting a saves $8 of $10 (80%) for 2 of 13 disruption (15%).
			name:  "a big saving for little disruption",
			nodes: []node{{name: "a", it: "c8", pods: many(1)}, {name: "b", it: "c2", pods: many(10)}},
			want:  true,
		},
		{
			// deleting a saves $2 of $10 (20%) for 11 of 13 disruption (85%).
			name:  "a small saving for most of the disruption",
			nodes: []node{{name: "a", it: "c2", pods: many(10)}, {name: "b", it: "c8", pods: []*corev1.Pod{pod("big", "7")}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, balancedPool, tc.nodes...)
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Command != nil; got != tc.want {
				t.Fatalf("command %v, want %v (verdicts %+v)", d.Command != nil, tc.want, d.Verdicts)
			}
			if d.Command != nil {
				checkCommand(t, in, d)
			} else if v := verdictOf(t, d, "a"); !strings.Contains(v.Unconsolidatable.String(), "is Balanced") {
				t.Errorf("verdict %+v, want the Balanced score", v)
			}
		})
	}
}
