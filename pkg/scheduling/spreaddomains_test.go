package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestSpreadDomainsAsKubeScheduler: which nodes a DoNotSchedule topology
// spread counts and admits, as kube-scheduler's PodTopologySpread filter
// decides them (pkg/scheduler/framework/plugins/podtopologyspread): under
// nodeAffinityPolicy Honor a node counts when it matches the pod's node
// selector and any one of its required node affinity terms; a node
// without the constraint's topology key is no domain, and the filter
// admits no pod of the constraint there.
func TestSpreadDomainsAsKubeScheduler(t *testing.T) {
	app := map[string]string{"app": "web"}
	zoneNode := func(name, zone string, pods ...*corev1.Pod) *scheduling.ExistingNode {
		return &scheduling.ExistingNode{Name: name, NodePool: "default", Labels: map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelHostname: name, "karpenter.sh/nodepool": "default"},
			Initialized: true, Allocatable: list("cpu", "8", "memory", "32Gi", "pods", "110"), Pods: pods}
	}
	bound := func(name, node string) *corev1.Pod {
		p := pod(name, "1", "", labeled("app", "web"))
		p.Spec.NodeName = node
		return p
	}
	where := func(p *scheduling.Plan, pod string) string {
		for _, e := range p.Existing {
			for _, q := range e.Pods {
				if q.Name == pod {
					return e.Node
				}
			}
		}
		for _, n := range p.NewNodeClaims {
			for _, q := range n.Pods {
				if q.Name == pod {
					return "new node in " + reqValues(n, corev1.LabelTopologyZone)[0]
				}
			}
		}
		return "nowhere"
	}
	runCases(t, []semanticCase{
		{
			// zone-a holds two web pods, zone-b none. The pod may go to
			// zone-a (first term) or zone-b (second): kube-scheduler counts
			// both zones, so the skew allows only zone-b. Counted by the
			// first term alone, zone-a was the only domain and took it.
			name: "nodeAffinityPolicy Honor counts the nodes of every required term",
			snap: func() *scheduling.Snapshot {
				s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), []*corev1.Pod{pod("new", "1", "", labeled("app", "web"),
					requiredTerms(
						[]corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a")},
						[]corev1.NodeSelectorRequirement{expr(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")}),
					spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app))})
				s.Nodes = []*scheduling.ExistingNode{
					zoneNode("a1", "zone-a", bound("old-1", "a1"), bound("old-2", "a1")),
					zoneNode("b1", "zone-b"),
				}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if got := where(p, "new"); got != "b1" && got != "new node in zone-b" {
					t.Errorf("the pod lands on %s; kube-scheduler admits it only in zone-b", got)
				}
			},
		},
		{
			// Node bare has room but no rack label: kube-scheduler's filter
			// turns the pod away from it ("missing required label").
			name: "a node without the topology key takes no pod of the constraint",
			snap: func() *scheduling.Snapshot {
				np := nodePool("default", poolReq("rack", corev1.NodeSelectorOpIn, "r1", "r2"))
				s := snapshot([]*scheduling.NodePool{np}, catalog(), []*corev1.Pod{pod("new", "1", "", labeled("app", "web"), spread("rack", 1, corev1.DoNotSchedule, app))})
				s.Nodes = []*scheduling.ExistingNode{zoneNode("bare", "zone-a")}
				return s
			},
			check: func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if got := where(p, "new"); got == "bare" || got == "nowhere" {
					t.Errorf("the pod lands %s; want a new node with a rack", got)
				}
			},
		},
	})
}
