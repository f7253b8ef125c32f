package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

func mergeFrom(obj client.Object) client.Patch {
	return client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{})
}

// updateNodeStatus applies mutate to the latest Node status, retrying on
// conflicts with the controllers that patch the same Node.
func (h *harness) updateNodeStatus(t *testing.T, name string, mutate func(*corev1.Node)) {
	t.Helper()
	test.Eventually(t, 0, func(ctx context.Context) error {
		n := &corev1.Node{}
		if err := h.kube.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		mutate(n)
		return h.kube.Status().Update(ctx, n)
	})
}
