package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestNodeThatNeverRegistersIsDeletedWithAnExplanation: with a short
// registration TTL, a launched instance whose kubelet never joins is
// deleted, and the NodeClaim and NodePool carry an event that says what to
// check.
func TestNodeThatNeverRegistersIsDeletedWithAnExplanation(t *testing.T) {
	h := start(t, options{faults: &simv1alpha1.Faults{NeverRegister: true}, registrationTTL: 3 * time.Second})
	nc := h.nodeClaim(t)
	h.create(t, nc)
	h.condition(t, nc.Name, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")

	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), got)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && got.DeletionTimestamp == nil {
			return fmt.Errorf("nodeclaim %s not deleted yet", nc.Name)
		}
		return nil
	})
	for _, regarding := range []string{nc.Name, h.pool} {
		note := h.event(t, regarding, events.RegistrationTimeout)
		requireMentions(t, note, "3s", "journalctl -u kubelet", "aws-auth", "userData", "architecture")
	}
}
