// Package optimistic writes a change to an object read from a controller's
// cache under optimistic locking, and recomputes it on the API server's own
// copy when the cache's is behind.
package optimistic

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch is how joiner's controllers write what they change on a Node, a
// NodeClaim or a NodePool (node and nodeclaim termination, disruption's
// taint, DisruptionReason and DriftHalted): it changes obj with change and
// writes the change with write under optimistic locking, so a list it
// rewrites whole (a Node's taints, which the API server treats as one
// atomic value; conditions; finalizers) cannot drop what another writer
// added. When obj is behind the API server the write conflicts, and then
// obj is read again from the API server itself and the change recomputed
// on it: a cache that lags behind a Node's heartbeats can no longer fail
// the write pass after pass. change reports whether obj needs one; when it
// says no, nothing is written and nothing re-read, so that answer is only
// as fresh as obj. Termination passes the cache's copy (it reconciles
// every Node often, and the watch event that brings a change in runs it
// again); a caller that must not miss a change another write just made
// passes a copy read from the API server. Patch reports whether it wrote;
// obj holds the API server's answer.
//
// The API server's copy must be the same object as the cache's: a Node
// deleted and registered again under its name (an instance replaced with
// the same host name) is another Node, whose finalizer and taints belong to
// its own termination. When the UID differs, Patch changes nothing and
// answers NotFound, as for an object that is gone, and obj is left as it
// was.
func Patch[O any, T interface {
	*O
	client.Object
}](ctx context.Context, api client.Reader, obj T, change func(T) bool, write func(T, client.Patch) error) (bool, error) {
	wrote, reread := false, false
	uid := obj.GetUID()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if reread {
			key := client.ObjectKeyFromObject(obj)
			fresh := T(new(O))
			if err := api.Get(ctx, key, fresh); err != nil {
				return err
			}
			if uid != "" && fresh.GetUID() != uid {
				return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
			}
			*obj = *fresh
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
