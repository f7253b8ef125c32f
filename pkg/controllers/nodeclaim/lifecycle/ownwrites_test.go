package lifecycle

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestStaleReadDoesNotRepeatTheLaunch: a reconcile that reads the NodeClaim
// as it was before this controller's own launch patch (with its finalizer,
// without the provider ID) (the cache has not
// caught up) neither asks the cloud again nor writes; once the cache shows
// the write, the NodeClaim moves on.
func TestStaleReadDoesNotRepeatTheLaunch(t *testing.T) {
	var stale *v1.NodeClaim
	u := newUnitWith(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && stale != nil {
				stale.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	nc := testNodeClaim("stale")
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	u.create(nc)
	before := u.nodeClaim("stale")
	u.reconcile("stale")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times by the first reconcile, want once", n)
	}

	stale = before
	res := u.reconcile("stale")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times after a stale read, want once", n)
	}
	if res.RequeueAfter != staleRequeue {
		t.Fatalf("a stale read requeues after %s, want %s (in case no watch event comes)", res.RequeueAfter, staleRequeue)
	}

	stale = nil
	u.reconcile("stale")
	if n := len(u.cloud.CreateCalls); n != 1 {
		t.Fatalf("Create called %d times once the cache caught up, want once", n)
	}
	if nc := u.nodeClaim("stale"); nc.Status.ProviderID == "" {
		t.Fatalf("the launch was recorded: %+v", nc.Status)
	}
}
