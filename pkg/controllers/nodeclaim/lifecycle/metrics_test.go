package lifecycle

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// TestRegisteredAndInitializedAreCountedOncePerNodeClaim: a status patch
// that loses a conflict is retried; the transition it carried is counted
// once, after the patch that lands it.
func TestRegisteredAndInitializedAreCountedOncePerNodeClaim(t *testing.T) {
	const pool = "metrics-once"
	conflicted := false
	u := newUnitWith(t, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && !conflicted && nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
				conflicted = true
				return apierrors.NewConflict(schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}, nc.Name, errFull)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	registered := testutil.ToFloat64(metrics.NodeClaimsRegistered.WithLabelValues(pool))
	initialized := testutil.ToFloat64(metrics.NodeClaimsInitialized.WithLabelValues(pool))

	nc := testNodeClaim("counted")
	nc.Labels[v1.LabelNodePool] = pool
	nc.Spec.StartupTaints = nil
	nc = u.launch(nc)
	u.create(registeringNode("node-counted", nc.Status.ProviderID, "amd64"))
	u.reconcile("counted") // registers and initializes; the status patch conflicts
	if !conflicted {
		t.Fatalf("the conflict was not exercised")
	}
	u.reconcile("counted")
	u.reconcile("counted")
	got := u.nodeClaim("counted")
	requireCondition(t, got, v1.ConditionTypeInitialized, "True", "")

	if d := testutil.ToFloat64(metrics.NodeClaimsRegistered.WithLabelValues(pool)) - registered; d != 1 {
		t.Errorf("registered counted %v times, want 1", d)
	}
	if d := testutil.ToFloat64(metrics.NodeClaimsInitialized.WithLabelValues(pool)) - initialized; d != 1 {
		t.Errorf("initialized counted %v times, want 1", d)
	}
}
