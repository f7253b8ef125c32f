package consolidation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch;update

// Options are the controller's dependencies.
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// CloudProvider names the node class kinds joiner serves; NodeClaims of
	// other kinds are left alone.
	CloudProvider cloudprovider.CloudProvider
	// Clock measures quiet time (default: the real clock).
	Clock clock.PassiveClock
}

// Controller is nodeclaim.consolidation.
type Controller struct {
	opts        Options
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and builds the controller.
func NewController(opts Options) (*Controller, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("nodeclaim consolidation: Client is required")
	case opts.CloudProvider == nil:
		return nil, errors.New("nodeclaim consolidation: CloudProvider is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("nodeclaim consolidation: %w", err)
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds the controller to mgr. A NodePool change (its
// consolidateAfter) re-evaluates every NodeClaim of the pool.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("nodeclaim.consolidation").
		For(&v1.NodeClaim{}).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfPool)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

func (c *Controller) nodeClaimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingLabels{v1.LabelNodePool: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims of nodepool", logging.NodePool, klog.KObj(o))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// Reconcile recomputes the condition from the NodeClaim and its NodePool,
// and asks to be called back when the quiet window ends.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Read without copies: most reconciles change nothing, and each copy
	// of a NodeClaim (and its NodePool) was garbage; the conditions alone
	// are copied for Evaluate to change, the claim only to patch it.
	noCopy := &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}
	cached := &v1.NodeClaim{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, cached, noCopy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cached.DeletionTimestamp != nil || !c.nodeClasses.Manages(cached.Spec.NodeClassRef) {
		return reconcile.Result{}, nil
	}
	pool := &v1.NodePool{}
	if err := c.opts.Client.Get(ctx, types.NamespacedName{Name: cached.Labels[v1.LabelNodePool]}, pool, noCopy); err != nil {
		if apierrors.IsNotFound(err) {
			// No pool, no consolidateAfter: nothing to say.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodepool of nodeclaim %s: %w", cached.Name, err)
	}
	evaluated := *cached
	evaluated.Status.Conditions = slices.Clone(cached.Status.Conditions)
	requeue := Evaluate(&evaluated, pool, c.opts.Clock.Now())
	if !conditionEqual(cached, &evaluated) {
		// The patch is computed against the cached claim, which it only
		// reads; the copy takes the API server's answer.
		nc := cached.DeepCopy()
		nc.Status.Conditions = evaluated.Status.Conditions
		if err := c.opts.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("recording %s on nodeclaim %s: %w", v1.ConditionTypeConsolidatable, nc.Name, client.IgnoreNotFound(err))
		}
		if nc.StatusConditions().IsTrue(v1.ConditionTypeConsolidatable) {
			log.FromContext(ctx).V(1).Info("marked consolidatable", logging.NodeClaim, klog.KObj(nc))
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// Evaluate sets or clears nc's Consolidatable condition as of now and
// returns how long until it would change by time alone (0: never).
//
// The quiet window starts at initialisation, when pods could first land,
// or at the last pod event after it. A pod event stamped before
// initialisation (joiner no longer records those, but a NodeClaim written
// by an earlier version may carry one) does not shorten the window.
func Evaluate(nc *v1.NodeClaim, pool *v1.NodePool, now time.Time) time.Duration {
	conds := nc.StatusConditions().At(now)
	after := pool.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil {
		conds.Clear(v1.ConditionTypeConsolidatable)
		return 0
	}
	initialized := conds.Get(v1.ConditionTypeInitialized)
	if initialized == nil || initialized.Status != "True" {
		conds.Clear(v1.ConditionTypeConsolidatable)
		return 0
	}
	quietSince := initialized.LastTransitionTime.Time
	if t := nc.Status.LastPodEventTime.Time; t.After(quietSince) {
		quietSince = t
	}
	if wait := quietSince.Add(*after).Sub(now); wait > 0 {
		conds.Clear(v1.ConditionTypeConsolidatable)
		return wait
	}
	conds.SetTrue(v1.ConditionTypeConsolidatable)
	return 0
}

func conditionEqual(a, b *v1.NodeClaim) bool {
	x := a.StatusConditions().Get(v1.ConditionTypeConsolidatable)
	y := b.StatusConditions().Get(v1.ConditionTypeConsolidatable)
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message
}
