package lifecycle

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
)

func TestLaunchRecordsTheInstanceOnce(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("launch-ok"))

	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		t.Errorf("the termination finalizer is added first")
	}
	if nc.Status.ProviderID == "" || nc.Status.ImageID != "fake-image" || nc.Status.Capacity.Cpu().IsZero() || nc.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("status not hydrated from the cloud: %+v", nc.Status)
	}
	if nc.Labels[v1.LabelInstanceType] != "fake.small" || nc.Labels["team"] != "web" {
		t.Errorf("labels: the cloud's are merged into the NodeClaim's: %v", nc.Labels)
	}
	requireCondition(t, nc, v1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound)
	requireCondition(t, nc, v1.ConditionTypeReady, metav1.ConditionUnknown, "")

	u.reconcile("launch-ok")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("a launched NodeClaim is never launched again: %d Create calls", n)
	}
}

func TestLaunchInsufficientCapacityDeletesTheNodeClaim(t *testing.T) {
	u := newUnit(t)
	u.cloud.NextCreateError = cloudprovider.NewInsufficientCapacityError(errors.New("no capacity"), "fake.small/zone-a/spot")
	u.create(testNodeClaim("launch-ice"))
	u.reconcile("launch-ice")

	nc := &v1.NodeClaim{}
	err := u.kube.Get(u.ctx, client.ObjectKey{Name: "launch-ice"}, nc)
	if err == nil && nc.DeletionTimestamp == nil {
		t.Fatalf("the NodeClaim must be deleted so the provisioner retries elsewhere")
	}
	e := u.event(events.InsufficientCapacityError)
	contains(t, e.Message, "fake.small/zone-a/spot", "retries")
}

func TestLaunchNodeClassNotReadyDeletesTheNodeClaim(t *testing.T) {
	u := newUnit(t)
	u.cloud.NextCreateError = cloudprovider.NewNodeClassNotReadyError(errors.New("SimNodeClass default not found"))
	u.create(testNodeClaim("launch-nodeclass"))
	u.reconcile("launch-nodeclass")
	nc := &v1.NodeClaim{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: "launch-nodeclass"}, nc); err == nil && nc.DeletionTimestamp == nil {
		t.Fatalf("the NodeClaim must be deleted")
	}
	contains(t, u.event(events.NodeClassNotReady).Message, "SimNodeClass", "default")
}

func TestLaunchCreateErrorIsShownOnLaunchedAndRetried(t *testing.T) {
	u := newUnit(t)
	u.cloud.NextCreateError = cloudprovider.NewCreateError(errors.New("subnet full"), "InsufficientFreeAddressesInSubnet", "subnet subnet-a has no free IP addresses")
	u.create(testNodeClaim("launch-err"))
	_, err := u.ctrl.Reconcile(u.ctx, requestFor("launch-err"))
	if err == nil {
		t.Fatalf("a generic launch failure returns an error so the controller backs off")
	}
	nc := u.nodeClaim("launch-err")
	c := requireCondition(t, nc, v1.ConditionTypeLaunched, metav1.ConditionUnknown, "InsufficientFreeAddressesInSubnet")
	contains(t, c.Message, "no free IP addresses")
	u.event(events.LaunchFailed)

	u.reconcile("launch-err")
	requireCondition(t, u.nodeClaim("launch-err"), v1.ConditionTypeLaunched, metav1.ConditionTrue, "")
}

func TestNodeClaimBeingDeletedIsLeftToTermination(t *testing.T) {
	nc := testNodeClaim("deleting")
	nc.Finalizers = []string{v1.TerminationFinalizer}
	now := metav1.Now()
	nc.DeletionTimestamp = &now
	u := newUnit(t, nc)
	u.reconcile("deleting")
	if len(u.cloud.CreateCalls) != 0 {
		t.Fatalf("a deleting NodeClaim is never launched")
	}
	if got := u.nodeClaim("deleting"); len(got.Status.Conditions) != 0 {
		t.Fatalf("a deleting NodeClaim's status is not touched: %v", got.Status.Conditions)
	}
}

func TestNodeClaimOfAnotherProviderIsIgnored(t *testing.T) {
	nc := testNodeClaim("foreign")
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "example.com", Kind: "OtherNodeClass", Name: "x"}
	u := newUnit(t, nc)
	u.reconcile("foreign")
	if len(u.cloud.CreateCalls) != 0 || controllerutil.ContainsFinalizer(u.nodeClaim("foreign"), v1.TerminationFinalizer) {
		t.Fatalf("a NodeClaim for a node class the provider does not serve is not touched")
	}
}
