// Package hash keeps the karpenter.sh/nodepool-hash and
// karpenter.sh/nodepool-hash-version annotations of every NodePool equal to
// the hash of its current template (v1.NodePool.Hash), so that the drift
// controller can tell a NodeClaim launched from an older template
// (NodePoolDrifted). When the hash version changes (a joiner upgrade that
// changes the hash, or NodeClaims launched by Karpenter, whose hash joiner
// does not reproduce) it re-stamps the pool's NodeClaims with the new
// version and the NodePool's hash instead of calling them drifted: the old
// hash cannot be compared with the new one. NodeClaims already drifted keep
// their old hash and stay drifted. It never changes a NodePool's spec.
package hash

import (
	"context"
	"errors"
	"fmt"
	"github.com/joiner-dev/joiner/pkg/logging"
	"k8s.io/klog/v2"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;update

// Options configure the hash controller.
type Options struct {
	// Client reads from the cache and patches NodePools and NodeClaims
	// (required).
	Client client.Client
}

// Controller is nodepool.hash.
type Controller struct {
	opts Options
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("nodepool hash options: Client is required")
	}
	return &Controller{opts: opts}, nil
}

// Register adds nodepool.hash to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("nodepool.hash").
		// The template (generation) and the hash annotations themselves are
		// all this controller reads; status updates are not its business.
		For(&v1.NodePool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering nodepool.hash: %w", err)
	}
	return nil
}

// Reconcile re-stamps the pool's NodeClaims whose hash version is not the
// current one, then writes the NodePool's hash and version.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	hash := np.Hash()
	if err := c.restampNodeClaims(ctx, np, hash); err != nil {
		return reconcile.Result{}, err
	}
	want := Annotations(np)
	if np.Annotations[v1.AnnotationNodePoolHash] == want[v1.AnnotationNodePoolHash] &&
		np.Annotations[v1.AnnotationNodePoolHashVersion] == want[v1.AnnotationNodePoolHashVersion] {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	maps.Copy(np.Annotations, want)
	if err := c.opts.Client.Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodepool %s with its hash: %w", np.Name, err))
	}
	log.FromContext(ctx).V(1).Info("nodepool hash updated", logging.NodePool, klog.KObj(np), logging.Hash, hash)
	return reconcile.Result{}, nil
}

// Annotations are the hash annotations np should carry now.
func Annotations(np *v1.NodePool) map[string]string {
	return map[string]string{
		v1.AnnotationNodePoolHash:        np.Hash(),
		v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion,
	}
}

// Restamp returns the hash annotations nc should get when its hash version
// is not the current one, or nil when it needs none. A NodeClaim already
// Drifted keeps its hash: the new algorithm cannot tell whether it still
// is, and un-drifting it silently would cancel a replacement in progress.
func Restamp(nc *v1.NodeClaim, poolHash string) map[string]string {
	if nc.Annotations[v1.AnnotationNodePoolHashVersion] == v1.NodePoolHashVersion {
		return nil
	}
	out := map[string]string{v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}
	if nc.StatusConditions().Get(v1.ConditionTypeDrifted) == nil {
		out[v1.AnnotationNodePoolHash] = poolHash
	}
	return out
}

func (c *Controller) restampNodeClaims(ctx context.Context, np *v1.NodePool, hash string) error {
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingLabels{v1.LabelNodePool: np.Name}); err != nil {
		return fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		want := Restamp(nc, hash)
		if want == nil || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		maps.Copy(nc.Annotations, want)
		if err := c.opts.Client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping nodeclaim %s with hash version %s: %w", nc.Name, v1.NodePoolHashVersion, err))
		}
	}
	return errors.Join(errs...)
}
