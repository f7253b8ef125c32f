package realise_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKubeSchedulerCountsSpreadDomainsAsTheSolver: which nodes a
// DoNotSchedule topology spread counts and admits, judged by
// kube-scheduler's PodTopologySpread filter. The solver and kube-scheduler
// each place one pod on the same existing nodes (no NodePool, so the
// solver may not launch one); they must choose the same node.
//
//   - Under nodeAffinityPolicy Honor a node counts when it matches the
//     pod's node selector and any one of its required node affinity
//     terms: a1 (zone-a) holds two pods of the spread, b1 (zone-b) none,
//     and the pod may use either zone, so only b1 keeps the skew. The
//     solver counted the nodes of the first term alone, saw zone-a as the
//     only domain and chose a1.
//   - A node without the constraint's topology key is no domain and takes
//     no pod of it ("missing required label"): the solver put the pod on
//     bare, which has no rack label.
func TestKubeSchedulerCountsSpreadDomainsAsTheSolver(t *testing.T) {
	web := map[string]string{"app": "web"}
	spread := func(key string) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}
	}
	zoneTerm := func(zone string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}
	}
	type spreadNode struct {
		name   string
		labels map[string]string
		pods   int // pods of the spread bound there
	}
	for _, tc := range []struct {
		name  string
		nodes []spreadNode
		pod   func(*corev1.Pod)
		want  string
	}{
		{
			name: "every required term",
			nodes: []spreadNode{
				{name: "a1", labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}, pods: 2},
				{name: "b1", labels: map[string]string{corev1.LabelTopologyZone: "zone-b"}},
			},
			pod: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{zoneTerm("zone-a"), zoneTerm("zone-b")},
				}}}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(corev1.LabelTopologyZone)}
			},
			want: "b1",
		},
		{
			name: "a node without the key",
			nodes: []spreadNode{
				{name: "bare", labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}},
				{name: "r1", labels: map[string]string{corev1.LabelTopologyZone: "zone-a", "rack": "r1"}, pods: 1},
			},
			pod: func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread("rack")}
			},
			want: "r1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := test.Env(t)
			r := newRun(t)
			ns, id, prefix, label, taint := r.ns, r.id, r.prefix, r.label, r.taint
			alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
			newPod := func(name string) *corev1.Pod {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{
						Containers:  []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
						Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: id, Effect: taint.Effect}, notReady},
					},
				}
				return p
			}
			snap := &scheduling.Snapshot{}
			var residents []*corev1.Pod
			for _, n := range tc.nodes {
				labels := map[string]string{corev1.LabelHostname: prefix + n.name, label: id}
				for k, v := range n.labels {
					labels[k] = v
				}
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: prefix + n.name, Labels: labels}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}}
				node.Status.Capacity, node.Status.Allocatable = alloc, alloc
				createNode(t, node)
				en := &scheduling.ExistingNode{Name: node.Name, Labels: labels, Taints: node.Spec.Taints, Initialized: true, Allocatable: alloc}
				for i := range n.pods {
					p := newPod(n.name + "-web-" + strconv.Itoa(i))
					p.Spec.NodeName = node.Name
					residents = append(residents, p)
					en.Pods = append(en.Pods, p)
				}
				snap.Nodes = append(snap.Nodes, en)
			}
			for _, p := range residents {
				env.Create(t, p.DeepCopy())
			}
			p := newPod("new")
			p.Spec.NodeSelector = map[string]string{label: id}
			tc.pod(p)
			snap.Pods = []*corev1.Pod{p}
			plan, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			solver := ""
			for _, e := range plan.Existing {
				for _, q := range e.Pods {
					if q == p {
						solver = e.Node
					}
				}
			}
			// The sentinel: once kube-scheduler binds it, its informers
			// hold every node and pod above.
			sentinel := newPod("sentinel")
			sentinel.Labels = nil
			sentinel.Spec.NodeName = ""
			sentinel.Spec.NodeSelector = map[string]string{corev1.LabelHostname: snap.Nodes[0].Name}
			env.Create(t, sentinel)
			if node := bound(t, sentinel); node != snap.Nodes[0].Name {
				t.Fatalf("the sentinel pod was bound to %q, want %s", node, snap.Nodes[0].Name)
			}
			env.Create(t, p)
			got := bound(t, p)
			t.Logf("kube-scheduler bound the pod to %q, the solver put it on %q", got, solver)
			if got != prefix+tc.want {
				t.Errorf("kube-scheduler bound the pod to %q; the test expects %s", got, prefix+tc.want)
			}
			if solver != got {
				t.Errorf("the solver put the pod on %q, kube-scheduler on %q", solver, got)
			}
		})
	}
}
