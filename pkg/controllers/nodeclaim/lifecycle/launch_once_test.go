package lifecycle

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestLaunchIsNotRepeatedWhenTheStatusPatchFails: when the status patch
// recording the instance fails, the next reconcile gets the launched
// instance back instead of launching another: the NodeClaim's UID is
// Create's client token, so asking again returns the same instance.
func TestLaunchIsNotRepeatedWhenTheStatusPatchFails(t *testing.T) {
	failed := false
	u := newUnitWith(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if !failed {
				failed = true
				return errors.New("api server unavailable")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	u.create(testNodeClaim("launch-once"))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("launch-once")); err == nil {
		t.Fatalf("the failed status patch is reported")
	}
	u.reconcile("launch-once")
	if n := len(u.cloud.CreateCalls); n != 2 || u.cloud.CreateCalls[0].UID != u.cloud.CreateCalls[1].UID {
		t.Fatalf("Create called %d times, want twice with the same client token", n)
	}
	nc := u.nodeClaim("launch-once")
	requireCondition(t, nc, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")
	if _, ok := u.cloud.Instances[nc.Status.ProviderID]; !ok || len(u.cloud.Instances) != 1 {
		t.Fatalf("the recorded provider ID is the one instance launched: %s, %d instances", nc.Status.ProviderID, len(u.cloud.Instances))
	}
}
