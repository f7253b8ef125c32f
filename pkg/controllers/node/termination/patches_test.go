package termination

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	fakecloud "github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestDrainPassesWriteOnlyChanges reconciles a terminating Node whose drain
// cannot finish (a pod asks not to be disrupted) pass after pass, as the
// one-second drain poll does: the Node is patched once (taint and load
// balancer label), the NodeClaim's status once (Drained Unknown), and the
// claim of a pod that stays is read from the cached client, not the API
// server.
func TestDrainPassesWriteOnlyChanges(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := fakecloud.New()
	nc := test.NodeClaim(test.NodeClaimOptions{Name: "claim", Finalizers: []string{v1.TerminationFinalizer}})
	launched, err := cloud.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = launched.Status.ProviderID
	deleted := metav1.NewTime(clk.Now())
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node", Finalizers: []string{v1.TerminationFinalizer}, DeletionTimestamp: &deleted},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	protected := test.Pod(test.PodOptions{Namespace: "ns", Name: "protected", NodeName: node.Name, Phase: corev1.PodRunning,
		Annotations: map[string]string{v1.AnnotationDoNotDisrupt: "true"}})
	staying := test.Pod(test.PodOptions{Namespace: "ns", Name: "staying", NodeName: node.Name, Phase: corev1.PodRunning,
		Tolerations: []corev1.Toleration{{Key: v1.TaintKeyDisrupted, Operator: corev1.TolerationOpExists}}})
	staying.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data"}}

	patches := map[string]int{}
	kube := fake.NewClientBuilder().WithScheme(test.Scheme()).
		WithObjects(nc, node, protected, staying, pvc).
		WithStatusSubresource(&v1.NodeClaim{}).
		WithIndex(&v1.NodeClaim{}, state.IndexNodeClaimProviderID, func(o client.Object) []string {
			return []string{o.(*v1.NodeClaim).Status.ProviderID}
		}).
		WithIndex(&corev1.Pod{}, state.IndexPodNodeName, func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				patches["node"]++
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				patches["nodeclaim status"]++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	ctrl, err := NewController(Options{Client: kube, APIReader: kube, CloudProvider: cloud, Recorder: &events.Buffer{}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 10 {
		clk.Step(drainPollInterval)
		res, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)})
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if res.RequeueAfter != drainPollInterval {
			t.Fatalf("pass %d: requeue after %s, want the drain poll %s", pass, res.RequeueAfter, drainPollInterval)
		}
	}
	if patches["node"] != 1 || patches["nodeclaim status"] != 1 {
		t.Errorf("10 passes patched the Node %d times and the NodeClaim's status %d times, want once each", patches["node"], patches["nodeclaim status"])
	}
	got := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 1 || !got.Spec.Taints[0].MatchTaint(&v1.DisruptedNoScheduleTaint) || got.Labels[labelExcludeFromLB] == "" {
		t.Errorf("node taints %v, labels %v: want the disrupted taint and %s", got.Spec.Taints, got.Labels, labelExcludeFromLB)
	}
}
