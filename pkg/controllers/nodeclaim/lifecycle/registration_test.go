package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
)

var agentTaint = corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}

func TestRegistrationSyncsTheNodeAndRemovesTheUnregisteredTaint(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-ok"))
	u.create(registeringNode("node-reg-ok", nc.Status.ProviderID, "amd64", agentTaint))
	u.reconcile("reg-ok")

	nc = u.nodeClaim("reg-ok")
	requireCondition(t, nc, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	if nc.Status.NodeName != "node-reg-ok" {
		t.Errorf("status.nodeName = %q", nc.Status.NodeName)
	}
	node := u.node("node-reg-ok")
	if node.Labels[v1.LabelNodeRegistered] != "true" || node.Labels["team"] != "web" || node.Labels[v1.LabelNodePool] != "default" || node.Labels[v1.LabelInstanceType] != "fake.small" {
		t.Errorf("labels not synced: %v", node.Labels)
	}
	if hasTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered) {
		t.Errorf("the unregistered taint must be removed")
	}
	if !hasTaint(node.Spec.Taints, nc.Spec.Taints[0]) || !hasTaint(node.Spec.Taints, agentTaint) {
		t.Errorf("the NodeClaim's taints are added and startup taints kept: %v", node.Spec.Taints)
	}
	if !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		t.Errorf("the Node gets the termination finalizer")
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].Kind != "NodeClaim" || node.OwnerReferences[0].Name != "reg-ok" {
		t.Errorf("the Node is owned by its NodeClaim: %v", node.OwnerReferences)
	}
	u.noEvent(events.UnregisteredTaintMissing)
	u.noEvent(events.StartupTaintsMissing)
}

func TestRegistrationWaitsForTheNode(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-wait"))
	c := requireCondition(t, nc, v1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound)
	contains(t, c.Message, nc.Status.ProviderID)
}

func TestRegistrationWithoutTheUnregisteredTaintIsReported(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-notaint"))
	node := registeringNode("node-notaint", nc.Status.ProviderID, "amd64", agentTaint)
	node.Spec.Taints = node.Spec.Taints[1:]
	u.create(node)
	u.reconcile("reg-notaint")

	requireCondition(t, u.nodeClaim("reg-notaint"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	contains(t, u.event(events.UnregisteredTaintMissing).Message, "karpenter.sh/unregistered:NoExecute", "--register-with-taints")
}

func TestRegistrationWithoutStartupTaintsIsReported(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-nostartup"))
	node := registeringNode("node-nostartup", nc.Status.ProviderID, "amd64")
	node.Labels[v1.LabelDoNotSyncTaints] = "true"
	u.create(node)
	u.reconcile("reg-nostartup")

	e := u.event(events.StartupTaintsMissing)
	contains(t, e.Message, "example.com/agent-not-ready:NoSchedule", "userData", "registerWithTaints", v1.LabelDoNotSyncTaints)
	got := u.node("node-nostartup")
	if hasTaintKey(got.Spec.Taints, agentTaint.Key) || hasTaintKey(got.Spec.Taints, "dedicated") {
		t.Errorf("with %s=true joiner does not add taints: %v", v1.LabelDoNotSyncTaints, got.Spec.Taints)
	}
}

func TestRegistrationWithTheLegacyTaintIsExplained(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-legacy"))
	node := registeringNode("node-legacy", nc.Status.ProviderID, "amd64", agentTaint,
		corev1.Taint{Key: v1.TaintKeyUninitializedLegacy, Effect: corev1.TaintEffectNoExecute})
	u.create(node)
	u.reconcile("reg-legacy")
	contains(t, u.event(events.LegacyUninitializedTaint).Message, "karpenter.sh/uninitialized", "karpenter.sh/unregistered:NoExecute")
}

func TestRegistrationKeepsTheKubeletsArchitectureLabel(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-arch"))
	u.create(registeringNode("node-arch", nc.Status.ProviderID, "arm64", agentTaint))
	u.reconcile("reg-arch")
	if got := u.node("node-arch").Labels[v1.LabelArch]; got != "arm64" {
		t.Fatalf("the kubelet's arch label must not be overwritten by the NodeClaim's: %q", got)
	}
}

func TestRegistrationWithTwoNodesForOneInstanceFails(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("reg-two"))
	u.create(registeringNode("node-two-a", nc.Status.ProviderID, "amd64"))
	u.create(registeringNode("node-two-b", nc.Status.ProviderID, "amd64"))
	u.reconcile("reg-two")
	c := requireCondition(t, u.nodeClaim("reg-two"), v1.ConditionTypeRegistered, metav1.ConditionFalse, ReasonMultipleNodesFound)
	contains(t, c.Message, "node-two-a", "node-two-b")
}

// roomHolder records HoldRoom calls with whether the Node still carried
// the unregistered taint at the time, and fails with err.
type roomHolder struct {
	u     *unit
	calls []string
	err   error
}

func (r *roomHolder) HoldRoom(_ context.Context, nodeClaim, node string) error {
	tainted := hasTaintKey(r.u.node(node).Spec.Taints, v1.TaintKeyUnregistered)
	r.calls = append(r.calls, fmt.Sprintf("%s/%s tainted=%t", nodeClaim, node, tainted))
	return r.err
}

// TestRegistrationHoldsTheRoomBeforeRemovingTheTaint: the planned pods'
// room is held while the Node still carries karpenter.sh/unregistered
// (the taint's removal wakes kube-scheduler); once per registration, and
// a failure to hold it does not hold up the registration.
func TestRegistrationHoldsTheRoomBeforeRemovingTheTaint(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "held"},
		{name: "holding failed", err: errors.New("the API server is unavailable")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t)
			room := &roomHolder{u: u, err: tc.err}
			u.ctrl.opts.Room = room
			nc := u.launch(testNodeClaim("reg-room"))
			u.create(registeringNode("node-reg-room", nc.Status.ProviderID, "amd64"))
			u.reconcile("reg-room")
			u.reconcile("reg-room")

			want := []string{"reg-room/node-reg-room tainted=true"}
			if !slices.Equal(room.calls, want) {
				t.Errorf("HoldRoom calls = %v, want %v", room.calls, want)
			}
			requireCondition(t, u.nodeClaim("reg-room"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
			if hasTaintKey(u.node("node-reg-room").Spec.Taints, v1.TaintKeyUnregistered) {
				t.Errorf("the unregistered taint must be removed")
			}
		})
	}
}

// TestRegistrationKeepsAConcurrentNodeChange: between registration's read
// of the Node and its patch, the kubelet writes the Node's status and
// another controller adds a taint. Registration does not undo the other
// controller's taint, and finishes in the same reconcile (a conflict that
// waited for the next one cost a second per Node in a scale-up).
func TestRegistrationKeepsAConcurrentNodeChange(t *testing.T) {
	other := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	raced := false
	u := newUnitWith(t, beforeFirstPatch(t, &raced, func(current *corev1.Node) {
		current.Spec.Taints = append(current.Spec.Taints, other)
		current.Status.Conditions = append(current.Status.Conditions, corev1.NodeCondition{Type: "Heartbeat", Status: corev1.ConditionTrue})
	}))
	nc := u.launch(testNodeClaim("reg-race"))
	u.create(registeringNode("node-reg-race", nc.Status.ProviderID, "amd64", agentTaint))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("reg-race")); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !raced {
		t.Fatalf("the race was not exercised")
	}
	requireCondition(t, u.nodeClaim("reg-race"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	node := u.node("node-reg-race")
	if hasTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered) {
		t.Errorf("the unregistered taint must be removed: %v", node.Spec.Taints)
	}
	if !hasTaint(node.Spec.Taints, other) || !hasTaint(node.Spec.Taints, agentTaint) || !hasTaint(node.Spec.Taints, nc.Spec.Taints[0]) {
		t.Errorf("the other controller's taint, the startup taint and the NodeClaim's taint must all stay: %v", node.Spec.Taints)
	}
	if node.Labels[v1.LabelNodeRegistered] != "true" || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		t.Errorf("registration's own changes must land: labels %v, finalizers %v", node.Labels, node.Finalizers)
	}
}

// TestRegistrationKeepsAConcurrentStatusChange: between the reconcile's
// read of the NodeClaim and its status patch, other controllers record the
// pod event time and a condition of their own. Registration's status still
// lands in the same reconcile, and theirs stays.
func TestRegistrationKeepsAConcurrentStatusChange(t *testing.T) {
	podEvent := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC))
	raced := false
	u := newUnitWith(t, beforeFirstRegisteredStatusPatch(t, &raced, func(current *v1.NodeClaim) {
		current.Status.LastPodEventTime = podEvent
		current.Status.Conditions = append(current.Status.Conditions, metav1.Condition{
			Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable", LastTransitionTime: podEvent})
	}))
	nc := u.launch(testNodeClaim("status-race"))
	u.create(registeringNode("node-status-race", nc.Status.ProviderID, "amd64"))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("status-race")); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !raced {
		t.Fatalf("the race was not exercised")
	}
	got := u.nodeClaim("status-race")
	requireCondition(t, got, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	if got.Status.NodeName != "node-status-race" {
		t.Errorf("status.nodeName = %q, want node-status-race", got.Status.NodeName)
	}
	requireCondition(t, got, v1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")
	if !got.Status.LastPodEventTime.Equal(&podEvent) {
		t.Errorf("lastPodEventTime = %v, want the other controller's %v", got.Status.LastPodEventTime, podEvent)
	}
}

// TestRegistrationLeavesAConcurrentLifecycleChange: the concurrent status
// write changed what this controller owns (another reconcile, of a newer
// copy, already registered the NodeClaim with a condition of its own).
// The conflicting reconcile does not lay its older view over it: it leaves
// the NodeClaim to the next reconcile.
func TestRegistrationLeavesAConcurrentLifecycleChange(t *testing.T) {
	newer := metav1.Condition{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered",
		Message: "written by a newer reconcile", LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC))}
	raced := false
	u := newUnitWith(t, beforeFirstRegisteredStatusPatch(t, &raced, func(current *v1.NodeClaim) {
		meta.RemoveStatusCondition(&current.Status.Conditions, newer.Type)
		current.Status.Conditions = append(current.Status.Conditions, newer)
	}))
	nc := u.launch(testNodeClaim("owned-race"))
	u.create(registeringNode("node-owned-race", nc.Status.ProviderID, "amd64"))
	res, err := u.ctrl.Reconcile(u.ctx, requestFor("owned-race"))
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !raced {
		t.Fatalf("the race was not exercised")
	}
	if res.RequeueAfter == 0 {
		t.Errorf("the conflicting reconcile must requeue")
	}
	got := requireCondition(t, u.nodeClaim("owned-race"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	if got.Message != newer.Message {
		t.Errorf("Registered was overwritten: %+v, want the newer reconcile's %+v", got, newer)
	}
}

// TestRegistrationRetryKeepsRemovedStartupTaintsRemoved: registration read
// a Node it had not registered yet, but by its patch the Node is registered
// (an earlier reconcile's patch, which the cache had not shown) and the
// startup taint's agent has removed it. The retry on the fresh Node must
// not put the startup taint back: the Node would never initialise.
func TestRegistrationRetryKeepsRemovedStartupTaintsRemoved(t *testing.T) {
	raced := false
	u := newUnitWith(t, beforeFirstPatch(t, &raced, func(current *corev1.Node) {
		current.Labels[v1.LabelNodeRegistered] = "true"
		current.Spec.Taints = slices.DeleteFunc(current.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == agentTaint.Key })
	}))
	nc := testNodeClaim("retry-startup")
	nc.Spec.StartupTaints = []corev1.Taint{agentTaint}
	nc = u.launch(nc)
	u.create(registeringNode("node-retry-startup", nc.Status.ProviderID, "amd64", agentTaint))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("retry-startup")); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !raced {
		t.Fatalf("the race was not exercised")
	}
	node := u.node("node-retry-startup")
	if hasTaint(node.Spec.Taints, agentTaint) {
		t.Errorf("the startup taint its agent removed came back: %v", node.Spec.Taints)
	}
	if hasTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered) {
		t.Errorf("the unregistered taint must be removed: %v", node.Spec.Taints)
	}
}

// namesakeReader reads through the client but answers with another UID, as
// if the NodeClaim had been deleted and re-created under the same name.
type namesakeReader struct{ client.Reader }

func (r namesakeReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	obj.SetUID("namesake-uid")
	return nil
}

// TestStatusConflictWithANamesakeIsNotRetried: the NodeClaim read after a
// conflicting status patch is a namesake (another UID). This reconcile's
// changes belong to the NodeClaim it read, so it does not lay them over
// the namesake: it leaves the NodeClaim to the next reconcile.
func TestStatusConflictWithANamesakeIsNotRetried(t *testing.T) {
	patches := 0
	u := newUnitWith(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && nc.Status.NodeName != "" {
				patches++
				return apierrors.NewConflict(v1.SchemeGroupVersion.WithResource("nodeclaims").GroupResource(), nc.Name, errors.New("changed"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	nc := u.launch(testNodeClaim("namesake"))
	u.ctrl.opts.APIReader = namesakeReader{u.kube}
	u.create(registeringNode("node-namesake", nc.Status.ProviderID, "amd64"))
	res, err := u.ctrl.Reconcile(u.ctx, requestFor("namesake"))
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if patches != 1 {
		t.Errorf("status patches: %d, want 1 (no retry onto a namesake)", patches)
	}
	if res.RequeueAfter == 0 {
		t.Errorf("the conflicting reconcile must requeue")
	}
}

// beforeFirstPatch intercepts the first patch of a Node: just before it,
// change is applied to the stored Node in an update of its own, as a
// concurrent writer would (the patch was computed from the older copy).
// *raced reports that it ran.
func beforeFirstPatch(t *testing.T, raced *bool, change func(*corev1.Node)) interceptor.Funcs {
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if node, ok := obj.(*corev1.Node); ok && !*raced {
				*raced = true
				current := &corev1.Node{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(node), current); err != nil {
					return err
				}
				change(current)
				if err := c.Update(ctx, current); err != nil {
					t.Fatalf("the concurrent change: %v", err)
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}
}

// beforeFirstRegisteredStatusPatch is beforeFirstPatch for the first
// status patch of a NodeClaim that names its node (registration's).
func beforeFirstRegisteredStatusPatch(t *testing.T, raced *bool, change func(*v1.NodeClaim)) interceptor.Funcs {
	return interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && !*raced && nc.Status.NodeName != "" {
				*raced = true
				current := &v1.NodeClaim{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(nc), current); err != nil {
					return err
				}
				change(current)
				if err := c.Status().Update(ctx, current); err != nil {
					t.Fatalf("the concurrent change: %v", err)
				}
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}
