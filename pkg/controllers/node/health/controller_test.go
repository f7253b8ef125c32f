package health

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	fakecloud "github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/events"
)

// repairing is the fake cloud with the Ready policy.
type repairing struct{ *fakecloud.CloudProvider }

func (repairing) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute}}
}

var now = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// managed returns a NodeClaim of pool and its Node, Ready or not since
// notReadyFor ago.
func managed(pool string, i int, notReadyFor time.Duration) (*v1.NodeClaim, *corev1.Node) {
	name := fmt.Sprintf("%s-%d", pool, i)
	pid := "sim:///sim-east-1a/i-" + name
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelNodePool: pool, v1.LabelCapacityType: "spot"},
			Finalizers: []string{v1.TerminationFinalizer}},
		Spec:   v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"}},
		Status: v1.NodeClaimStatus{ProviderID: pid, NodeName: name},
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
	if notReadyFor > 0 {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-notReadyFor))}
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: name, UID: nc.UID}}},
		Spec:   corev1.NodeSpec{ProviderID: pid},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}},
	}
	return nc, node
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name        string
		notReadyFor []time.Duration // per node of the pool; node 0 is reconciled
		repaired    bool
		requeue     time.Duration
		event       string
	}{
		{name: "healthy", notReadyFor: []time.Duration{0, 0}},
		{name: "not ready within toleration", notReadyFor: []time.Duration{10 * time.Minute, 0, 0, 0, 0}, requeue: 20 * time.Minute},
		{name: "not ready past toleration", notReadyFor: []time.Duration{31 * time.Minute, 0, 0, 0, 0}, repaired: true, event: events.Unhealthy},
		{name: "single-node pool", notReadyFor: []time.Duration{time.Hour}, repaired: true, event: events.Unhealthy},
		{name: "too many unhealthy", notReadyFor: []time.Duration{time.Hour, time.Minute, 0, 0, 0}, requeue: BlockedRequeue, event: events.NodeRepairBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(s)
			_ = apis.AddToScheme(s)
			objs := []client.Object{&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}}
			for i, d := range tc.notReadyFor {
				nc, node := managed("pool", i, d)
				objs = append(objs, nc, node)
			}
			kube := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			recorder := &events.Buffer{}
			c, err := NewController(Options{Client: kube, CloudProvider: repairing{fakecloud.New()}, Recorder: recorder, Clock: clocktesting.NewFakeClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "pool-0"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.requeue)
			}
			nc := &v1.NodeClaim{}
			if err := kube.Get(context.Background(), client.ObjectKey{Name: "pool-0"}, nc); err != nil {
				t.Fatal(err)
			}
			if repaired := nc.DeletionTimestamp != nil; repaired != tc.repaired {
				t.Fatalf("nodeclaim deleted = %v, want %v", repaired, tc.repaired)
			}
			if tc.repaired && nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] != now.Format(time.RFC3339) {
				t.Errorf("termination deadline %q, want now (forceful)", nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp])
			}
			reasons := recorder.Reasons()
			if (tc.event == "") != (len(reasons) == 0) || (tc.event != "" && reasons[0] != tc.event) {
				t.Errorf("events %v, want %q", reasons, tc.event)
			}
		})
	}
}
