package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestDeletingTheNodeDeletesTheNodeClaim: `kubectl delete node` on a
// managed node deletes its NodeClaim (termination then takes over).
func TestDeletingTheNodeDeletesTheNodeClaim(t *testing.T) {
	h := start(t, options{})
	nc := h.nodeClaim(t)
	h.create(t, nc)
	got := h.condition(t, nc.Name, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	if err := h.kube.Delete(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: got.Status.NodeName}}); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		cur := &v1.NodeClaim{}
		err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), cur)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil && cur.DeletionTimestamp == nil {
			return fmt.Errorf("nodeclaim %s not deleted after its node", nc.Name)
		}
		return nil
	})
}
