package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestProvisionKeepsNodesNominatedWhilePodsWait: upstream's performance
// suite on an overloaded control plane, at small scale. Pods that each need
// their own node (self anti-affinity) were planned onto NodeClaims whose
// Nodes initialised, Ready and untainted, but kube-scheduler has not bound
// them for minutes. As in Karpenter, whose every pass plans the pending
// pods again and nominates the nodes they would go to, each node stays
// nominated the whole time (disruption never sees it empty), and the
// passes the pod trigger runs place the pods onto the nodes planned for
// them, never onto new NodeClaims. Before, each nomination lapsed one
// window after the node initialised and the node looked empty until a
// pass planned its pod again (P10's emptiness of 92 nodes).
func TestProvisionKeepsNodesNominatedWhilePodsWait(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	const replicas = 3
	pods := f.pendingPods(replicas, "1", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}},
		}}}}
	})
	r := f.replica()
	if res := r.provision(); len(res.Created) != replicas {
		t.Fatalf("first pass created %d NodeClaims, want %d", len(res.Created), replicas)
	}
	for i, nc := range f.nodeClaims() {
		f.initialise(&nc, fmt.Sprintf("node-%d", i))
	}
	r.provision()

	// The pod trigger's schedule: each pod is checked again when Holds
	// says its nomination stops keeping it out (plus the trigger's slack),
	// and then a pass runs.
	start := f.clock.Now()
	end := start.Add(3 * time.Minute)
	for f.clock.Now().Before(end) {
		next := f.clock.Now().Add(10 * time.Second)
		for _, pod := range pods {
			if _, until, held := r.state.Nominations().Holds(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}); held && until.Before(next) {
				next = until
			}
		}
		f.clock.SetTime(next.Add(100 * time.Millisecond))
		for _, sn := range r.state.ReadOnlyNodes() {
			if !sn.Nominated() {
				t.Fatalf("at +%s node %s, planned for a pod still pending, is not nominated: disruption may take it for empty", f.clock.Now().Sub(start), sn.Name())
			}
		}
		if res := r.provision(); len(res.Created) != 0 || len(res.Unschedulable) != 0 {
			t.Fatalf("a pass planned %d pods again onto %d new NodeClaims (%d unschedulable); want them on the nodes planned for them", res.Pending, len(res.Created), len(res.Unschedulable))
		}
	}
	if got := len(f.nodeClaims()); got != replicas {
		t.Fatalf("%d NodeClaims, want %d", got, replicas)
	}
}

// initialise plays nc's launch, registration and initialisation: its Node,
// Ready and untainted, and the NodeClaim's conditions.
func (f *fixture) initialise(nc *v1.NodeClaim, name string) {
	t := f.t
	t.Helper()
	ctx := t.Context()
	nc.Status.ProviderID = "fake:///zone-a/" + name
	nc.Status.NodeName = name
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc.Status.Allocatable = nc.Status.Capacity
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	if err := f.env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{corev1.LabelHostname: name, v1.LabelNodeRegistered: "true", v1.LabelNodeInitialized: "true"}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}}
	f.env.Create(t, node)
	t.Cleanup(func() { _ = f.env.Client.Delete(context.Background(), node) })
	// kube-apiserver's admission taints a new Node not-ready; the node
	// lifecycle controller (not running here) lifts it once Ready.
	node.Spec.Taints = nil
	if err := f.env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity, node.Status.Allocatable = nc.Status.Capacity, nc.Status.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := f.env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}
