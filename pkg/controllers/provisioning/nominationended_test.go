package provisioning_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestProvisionPlansAgainWhenThePlannedNodeFilledUp: the node planned for
// a pod initialised, others took its room and kube-scheduler rejected the
// pod: the next pass plans the pod again at once (no waiting out the
// nomination window) and tells the pod why.
func TestProvisionPlansAgainWhenThePlannedNodeFilledUp(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	pod := f.pendingPods(1, "1", nil)[0]
	r := f.replica()
	if res := r.provision(); len(res.Created) != 1 {
		t.Fatalf("first pass created %d NodeClaims, want 1", len(res.Created))
	}
	if res := r.provision(); len(res.Created) != 0 {
		t.Fatalf("a nominated pod is not planned again: created %d", len(res.Created))
	}

	// The NodeClaim's node registers and initialises, full of another pod.
	c := test.Env(t).Client
	nc := f.nodeClaims()[0]
	nodeName := test.Name(t, "node")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{v1.LabelNodePool: f.nodePool.Name, v1.LabelNodeInitialized: "true"}},
		Spec:       corev1.NodeSpec{ProviderID: "fake://" + nodeName},
	}
	f.env.Create(t, node)
	t.Cleanup(func() { _ = c.Delete(t.Context(), node) })
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Capacity = node.Status.Allocatable
	if err := c.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	filler := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: f.ns},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
	}
	f.env.Create(t, filler)
	nc.Status.ProviderID = node.Spec.ProviderID
	nc.Status.NodeName = nodeName
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	if err := c.Status().Update(t.Context(), &nc); err != nil {
		t.Fatal(err)
	}
	if res := r.provision(); len(res.Created) != 0 {
		t.Fatalf("before kube-scheduler rejected the pod again, it stays nominated: created %d", len(res.Created))
	}

	// kube-scheduler tries the pod on the initialised node and rejects it.
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions[0].Message = "0/1 nodes are available: 1 Insufficient cpu."
	if err := c.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	res := r.provision()
	if len(res.Created) != 1 || res.Created[0].Name == nc.Name {
		t.Fatalf("the rejected pod must get a new NodeClaim at once: created %v", res.Created)
	}
	want := fmt.Sprintf("Normal NominationEnded Pod was planned for node/%s (nodeclaim/%s), which filled up; planning again", nodeName, nc.Name)
	if !slices.Contains(f.events(), want) {
		t.Fatalf("events:\n%s\nwant %q", strings.Join(f.events(), "\n"), want)
	}
}
