package lifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// laggingCache makes the unit's reads of NodeClaims (gets, and lists by
// provider ID) show a cache behind the API server: while lagging, a
// NodeClaim reads as its entry in old, and as absent without one. Writes
// reach the API server.
type laggingCache struct {
	lagging bool
	old     map[string]*v1.NodeClaim
}

func (l *laggingCache) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && l.lagging {
				old := l.old[key.Name]
				if old == nil {
					return apierrors.NewNotFound(v1.SchemeGroupVersion.WithResource("nodeclaims").GroupResource(), key.Name)
				}
				old.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1.NodeClaimList); ok && l.lagging {
				return nil // no cached NodeClaim has a provider ID yet
			}
			return c.List(ctx, list, opts...)
		},
	}
}

// TestStaleReadActsOnTheKeptWrite: a reconcile that reads the NodeClaim as
// it was before this controller's own launch patch (the cache has not
// caught up) acts on the NodeClaim as the patch returned it: it neither
// asks the cloud again nor waits for the watch to register the Node.
func TestStaleReadActsOnTheKeptWrite(t *testing.T) {
	lag := &laggingCache{old: map[string]*v1.NodeClaim{}}
	u := newUnitWith(t, lag.funcs())
	nc := testNodeClaim("stale")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	lag.old["stale"] = u.nodeClaim("stale")
	u.reconcile("stale")
	launched := u.nodeClaim("stale")

	lag.lagging = true
	u.create(registeringNode("node-stale", launched.Status.ProviderID, "amd64"))
	u.reconcile("stale")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times, want once", n)
	}
	lag.lagging = false
	requireCondition(t, u.nodeClaim("stale"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	if hasTaintKey(u.node("node-stale").Spec.Taints, v1.TaintKeyUnregistered) {
		t.Fatal("the Node kept the unregistered taint")
	}
}

// TestRefusedWriteFromTheKeptCopyWaitsForTheCache: when someone else changed
// the NodeClaim after this controller's write, the write from the kept copy
// conflicts; the copy is dropped, so the next stale read waits for the
// cache (without launching again), and the NodeClaim moves on once the
// cache shows the change.
func TestRefusedWriteFromTheKeptCopyWaitsForTheCache(t *testing.T) {
	lag := &laggingCache{old: map[string]*v1.NodeClaim{}}
	u := newUnitWith(t, lag.funcs())
	nc := testNodeClaim("refused")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	lag.old["refused"] = u.nodeClaim("refused")
	u.reconcile("refused")

	other := u.nodeClaim("refused")
	other.Status.Conditions = append(other.Status.Conditions, metav1.Condition{Type: "Example", Status: metav1.ConditionTrue, Reason: "Example", LastTransitionTime: metav1.Now()})
	other.Status.NodeName = "someone-else"
	if err := u.kube.Status().Update(u.ctx, other); err != nil {
		t.Fatal(err)
	}
	lag.lagging = true
	u.create(registeringNode("node-refused", other.Status.ProviderID, "amd64"))
	if res := u.reconcile("refused"); res.RequeueAfter != conflictRequeue {
		t.Fatalf("the refused write requeues after %s, want %s", res.RequeueAfter, conflictRequeue)
	}
	if res := u.reconcile("refused"); res.RequeueAfter != staleRequeue {
		t.Fatalf("a stale read after the refusal requeues after %s, want %s (waiting for the cache)", res.RequeueAfter, staleRequeue)
	}
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times, want once", n)
	}

	lag.lagging = false
	u.reconcile("refused")
	requireCondition(t, u.nodeClaim("refused"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
}

// TestHandedOverNodeClaimLaunchesBeforeTheCacheHasIt: a NodeClaim its
// creator handed over (Created) launches while the cache does not hold it
// yet, launches once, and the Node that registers for it wakes it although
// the cache's index does not know its provider ID. A NodeClaim absent from
// the cache and never handed over is left alone.
func TestHandedOverNodeClaimLaunchesBeforeTheCacheHasIt(t *testing.T) {
	lag := &laggingCache{lagging: true}
	u := newUnitWith(t, lag.funcs())
	nc := testNodeClaim("handed")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	u.create(testNodeClaim("not-handed"))
	u.ctrl.Created(nc)
	select {
	case e := <-u.ctrl.created:
		if e.Object.Name != "handed" {
			t.Fatalf("queued %s, want handed", e.Object.Name)
		}
	default:
		t.Fatal("Created queued nothing")
	}

	u.reconcile("handed")
	u.reconcile("handed")
	u.reconcile("not-handed")
	if n := len(u.cloud.CreateCalls); n != 1 || u.cloud.CreateCalls[0].Name != "handed" {
		t.Fatalf("Create calls %d (want one, for handed)", n)
	}
	lag.lagging = false
	got := u.nodeClaim("handed")
	requireCondition(t, got, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")

	lag.lagging = true
	node := registeringNode("node-handed", got.Status.ProviderID, "amd64")
	reqs := u.ctrl.nodeClaimsForNode(u.ctx, node)
	if len(reqs) != 1 || reqs[0].Name != "handed" {
		t.Fatalf("the Node's event enqueues %v, want handed", reqs)
	}
}

// TestHandedOverNodeClaimDeletedBeforeTheCacheSawIt: a handed-over
// NodeClaim deleted before the cache ever held it is launched from the
// copy, and its instance is deleted at once when recording the launch
// finds the NodeClaim gone; then the copy is forgotten.
func TestHandedOverNodeClaimDeletedBeforeTheCacheSawIt(t *testing.T) {
	lag := &laggingCache{lagging: true}
	u := newUnitWith(t, lag.funcs())
	nc := testNodeClaim("gone")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	u.ctrl.Created(nc)
	lag.lagging = false
	gone := u.nodeClaim("gone")
	controllerutil.RemoveFinalizer(gone, v1.TerminationFinalizer)
	if err := u.kube.Update(u.ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := u.kube.Delete(u.ctx, gone); err != nil {
		t.Fatal(err)
	}
	lag.lagging = true

	u.reconcile("gone")
	if n, d := len(u.cloud.CreateCalls), len(u.cloud.DeleteCalls); n != 1 || d != 1 {
		t.Fatalf("Create called %d times and Delete %d, want once each", n, d)
	}
	u.reconcile("gone")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times after the copy was forgotten, want once", n)
	}
	if _, stale := u.ctrl.written.Latest(client.ObjectKey{Name: "gone"}, ""); stale {
		t.Fatal("the copy of the deleted NodeClaim is still kept")
	}
	var nodes corev1.NodeList
	if err := u.kube.List(u.ctx, &nodes); err != nil || len(nodes.Items) != 0 {
		t.Fatalf("nodes %v (%v)", nodes.Items, err)
	}
}

// TestHandedOverLaunchIsNotReleasedOnAFailedWrite: a handed-over NodeClaim
// the cache does not hold yet launches, and its launch's write times out
// (it may still have landed). The cache's "not found" is no proof the
// NodeClaim is gone: the API server is asked, and the instance is kept.
func TestHandedOverLaunchIsNotReleasedOnAFailedWrite(t *testing.T) {
	lag := &laggingCache{lagging: true}
	funcs := lag.funcs()
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*v1.NodeClaim); ok {
			return apierrors.NewTimeoutError("the server was too busy", 1)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}
	u := newUnitWith(t, funcs)
	u.ctrl.opts.APIReader = pastTheLag{lag: lag, c: u.kube}
	nc := testNodeClaim("timeout")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	u.ctrl.Created(nc)
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("timeout")); err == nil {
		t.Fatal("the timed-out write was not reported")
	}
	if n, d := len(u.cloud.CreateCalls), len(u.cloud.DeleteCalls); n != 1 || d != 0 {
		t.Fatalf("Create called %d times and Delete %d, want one launch and no release", n, d)
	}
}

// pastTheLag reads what the API server holds, whatever the lagging cache
// shows (the lifecycle's APIReader).
type pastTheLag struct {
	lag *laggingCache
	c   client.Client
}

func (p pastTheLag) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	was := p.lag.lagging
	p.lag.lagging = false
	defer func() { p.lag.lagging = was }()
	return p.c.Get(ctx, key, obj, opts...)
}

func (p pastTheLag) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	was := p.lag.lagging
	p.lag.lagging = false
	defer func() { p.lag.lagging = was }()
	return p.c.List(ctx, list, opts...)
}
