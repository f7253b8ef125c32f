package counter

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/state"
)

func TestCounterWritesResourcesAndNodesOnceSynced(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-1", Labels: map[string]string{v1.LabelNodePool: "default"}},
		Status: v1.NodeClaimStatus{ProviderID: "sim:///a/i-1", Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}},
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(np, nc).WithStatusSubresource(&v1.NodePool{}, &v1.NodeClaim{}).Build()
	cluster, err := state.NewCluster(state.Options{Reader: kube})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(Options{Client: kube, Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "default"}}

	res, err := c.Reconcile(ctx, req)
	if err != nil || res.RequeueAfter != unsyncedRequeue {
		t.Fatalf("an unsynced state writes nothing and retries soon: %v %v", res, err)
	}
	got := &v1.NodePool{}
	_ = kube.Get(ctx, req.NamespacedName, got)
	if got.Status.Nodes != nil {
		t.Fatalf("nothing written while unsynced")
	}

	cluster.UpdateNodeClaim(nc)
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	_ = kube.Get(ctx, req.NamespacedName, got)
	if got.Status.Nodes == nil || *got.Status.Nodes != 1 {
		t.Fatalf("status.nodes = %v, want 1", got.Status.Nodes)
	}
	cpu := got.Status.Resources[corev1.ResourceCPU]
	nodes := got.Status.Resources[v1.ResourceNodes]
	if cpu.String() != "4" || nodes.String() != "1" {
		t.Fatalf("status.resources = %v", got.Status.Resources)
	}
}
