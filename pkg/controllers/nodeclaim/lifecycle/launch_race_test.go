package lifecycle

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestLaunchRaceWithTermination: termination may delete a NodeClaim it saw
// without a provider ID while lifecycle is launching its instance. The
// instance launched for it must be deleted at once, not left to garbage
// collection.
func TestLaunchRaceWithTermination(t *testing.T) {
	for _, tc := range []struct {
		name string
		// terminate is what termination does between Create and the patch.
		terminate func(ctx context.Context, c client.Client, nc *v1.NodeClaim) error
	}{
		{
			name: "finalizer removed, the NodeClaim is gone",
			terminate: func(ctx context.Context, c client.Client, nc *v1.NodeClaim) error {
				if err := c.Delete(ctx, nc); err != nil {
					return err
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
					return err
				}
				nc.Finalizers = nil
				return c.Update(ctx, nc)
			},
		},
		{
			name: "deleting, finalizer not yet removed",
			terminate: func(ctx context.Context, c client.Client, nc *v1.NodeClaim) error {
				return c.Delete(ctx, nc)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u *unit
			raced := false
			u = newUnitWith(t, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if nc, ok := obj.(*v1.NodeClaim); ok && !raced && len(u.cloud.CreateCalls) > 0 {
						raced = true
						current := &v1.NodeClaim{}
						if err := c.Get(ctx, client.ObjectKeyFromObject(nc), current); err != nil {
							return err
						}
						if err := tc.terminate(ctx, c, current); err != nil {
							t.Fatalf("terminating: %v", err)
						}
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			u.create(testNodeClaim("race"))
			if _, err := u.ctrl.Reconcile(u.ctx, requestFor("race")); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if !raced {
				t.Fatalf("the race was not exercised")
			}
			if len(u.cloud.CreateCalls) != 1 {
				t.Fatalf("Create called %d times, want 1", len(u.cloud.CreateCalls))
			}
			if len(u.cloud.Instances) != 0 {
				t.Fatalf("the instance launched for the deleted NodeClaim is still running: %v", u.cloud.Instances)
			}
			if len(u.cloud.DeleteCalls) != 1 {
				t.Fatalf("Delete called %d times, want 1", len(u.cloud.DeleteCalls))
			}
			u.reconcile("race")
			if len(u.cloud.CreateCalls) != 1 || len(u.cloud.DeleteCalls) != 1 {
				t.Fatalf("a later reconcile neither launches nor deletes again: %d creates, %d deletes",
					len(u.cloud.CreateCalls), len(u.cloud.DeleteCalls))
			}
		})
	}
}

// TestDeletingNodeClaimReleasesAnUnrecordedLaunch: a NodeClaim found
// deleting with its launch still unrecorded (the patch failed) has its
// instance deleted, since termination cannot see it.
func TestDeletingNodeClaimReleasesAnUnrecordedLaunch(t *testing.T) {
	var u *unit
	failed := false
	u = newUnitWith(t, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok && !failed && len(u.cloud.CreateCalls) > 0 {
				failed = true
				return errFull
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	u.create(testNodeClaim("unrecorded"))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("unrecorded")); err == nil {
		t.Fatalf("the failed patch is reported")
	}
	if len(u.cloud.Instances) != 1 {
		t.Fatalf("one instance launched, got %d", len(u.cloud.Instances))
	}
	if err := u.kube.Delete(u.ctx, u.nodeClaim("unrecorded")); err != nil {
		t.Fatal(err)
	}
	u.reconcile("unrecorded")
	if len(u.cloud.Instances) != 0 {
		t.Fatalf("the unrecorded instance of a deleting NodeClaim is deleted: %v", u.cloud.Instances)
	}
}
