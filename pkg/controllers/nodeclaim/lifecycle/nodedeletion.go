package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/state"
)

func (c *Controller) registerNodeDeletion(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("node.lifecycle").
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetDeletionTimestamp() != nil
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.ReconcileNode))
}

// ReconcileNode deletes the NodeClaims of a managed Node that is being
// deleted, so `kubectl delete node` ends in the instance's termination
// rather than a NodeClaim without a Node.
func (c *Controller) ReconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) || node.Spec.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeclaims of node %s: %w", node.Name, err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.DeletionTimestamp != nil {
			continue
		}
		if err := c.opts.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of deleted node %s: %w", nc.Name, node.Name, err)
		}
		c.opts.Recorder.Publish(events.Normal(nc, events.NodeDeleted, "Delete", "Node %s is being deleted, so its NodeClaim %s is deleted too", node.Name, nc.Name))
		log.FromContext(ctx).Info("deleting nodeclaim of deleted node", "Node", node.Name, "NodeClaim", nc.Name)
	}
	return reconcile.Result{}, nil
}
