package termination

import (
	"context"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// patchFresh changes obj with change and writes the change with write under
// optimistic locking, so a list it rewrites whole (a Node's taints, which
// the API server treats as one atomic value; a NodeClaim's conditions;
// finalizers) cannot drop what another writer added. obj is first the
// cache's copy. When that copy is behind the API server the write conflicts,
// and then obj is read again from the API server itself and the change
// recomputed on it: a cache that lags behind a Node's heartbeats can no
// longer fail the write pass after pass. change reports whether obj needed
// one; on a fresh copy that already has it nothing is written. patchFresh
// reports whether it wrote; obj holds the API server's answer.
func patchFresh[O any, T interface {
	*O
	client.Object
}](ctx context.Context, api client.Reader, obj T, change func(T) bool, write func(T, client.Patch) error) (bool, error) {
	wrote, reread := false, false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if reread {
			key := client.ObjectKeyFromObject(obj)
			*obj = *new(O) // a Get decodes into obj: start from nothing
			if err := api.Get(ctx, key, obj); err != nil {
				return err
			}
		}
		reread = true
		stored := obj.DeepCopyObject().(T)
		if !change(obj) {
			return nil
		}
		if err := write(obj, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}
