package scheduling

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPreparedNodesStartClean: a Prepared hands a solve's second pass
// (Solve's other pod order) the nodes' facts it read for the first; the
// first pass's placements grow its own nodes' requests and host ports,
// and the second must start from the nodes as they are, as a solve
// without a Prepared does.
func TestPreparedNodesStartClean(t *testing.T) {
	ported := func(name string, port int32) *corev1.Pod {
		p := repackPod(name, "500m", "512Mi", map[string]string{"app": name})
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: port, ContainerPort: port}}
		return p
	}
	var nodes []*ExistingNode
	for _, name := range []string{"node-a", "node-b"} {
		nodes = append(nodes, &ExistingNode{Name: name, Initialized: true,
			Labels:      map[string]string{corev1.LabelHostname: name},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10")},
			Pods:        []*corev1.Pod{ported(name+"-bound", 80)}})
	}
	snap := &Snapshot{
		NodePools:     []*NodePool{{Name: "default"}},
		InstanceTypes: map[string][]*InstanceType{"default": repackCatalog()},
		Nodes:         nodes,
		Pods:          []*corev1.Pod{ported("p1", 8080), ported("p2", 8081), repackPod("p3", "1", "1Gi", nil)},
	}
	pr := NewPrepared()
	clear(pr.nodes)
	prepared := Options{MaxInstanceTypes: DefaultMaxInstanceTypes, prepared: pr}
	first, err := newSolver(snap, prepared)
	if err != nil {
		t.Fatal(err)
	}
	first.placeAll()
	placed := 0
	for _, n := range first.existing {
		placed += len(n.pods)
	}
	if placed == 0 {
		t.Fatal("the first pass placed nothing on the nodes: the test proves nothing")
	}
	second, err := newSolver(snap, prepared)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := newSolver(snap, Options{MaxInstanceTypes: DefaultMaxInstanceTypes})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range second.existing {
		want := fresh.existing[i]
		if !slices.Equal(n.requests, want.requests) || !slices.Equal(n.ports, want.ports) || !slices.Equal(n.alloc, want.alloc) {
			t.Errorf("%s starts the second pass with requests %v, ports %v, allocatable %v; want %v, %v, %v",
				n.ex.Name, n.requests, n.ports, n.alloc, want.requests, want.ports, want.alloc)
		}
	}
}
