package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestExpiredNodeClaimIsDeleted: a NodeClaim whose expireAfter has passed
// is deleted forcefully, through termination (its Node goes too), with an
// Expired event.
func TestExpiredNodeClaimIsDeleted(t *testing.T) {
	h := start(t, options{disruption: true})
	nc := h.nodeClaim(t)
	nc.Spec.StartupTaints = nil
	nc.Spec.ExpireAfter = v1.MustParseNillableDuration("6s")
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
	h.create(t, nc)
	got := h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
	node := got.Status.NodeName

	h.gone(t, nc.Name, 45*time.Second)
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		err := h.kube.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("node %s still exists", node)
	})
	requireMentions(t, h.event(t, nc.Name, events.Expired), "expired", "6s", "1m0s")
}
