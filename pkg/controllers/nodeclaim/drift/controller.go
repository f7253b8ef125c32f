// Package drift maintains the Drifted condition of launched NodeClaims:
// True, with Karpenter's reason, when the node no longer matches what its
// NodePool and node class would launch now (NodePoolDrifted,
// RequirementsDrifted, InstanceTypeNotFound, or the cloud provider's own
// reason such as ImageDrifted); removed when it matches again. It only
// reports: the disruption controller decides when drifted nodes are
// replaced, within the NodePool's budgets.
package drift

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// DefaultRecheckInterval is how often a NodeClaim is checked again when
// nothing it is watched through changed: the cloud's own drift (a new image
// resolved by a selector) is not an event joiner sees. Karpenter's is 5m.
const DefaultRecheckInterval = 5 * time.Minute

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Options configure the drift controller.
type Options struct {
	// Client reads from the cache and patches NodeClaim status (required).
	Client client.Client
	// CloudProvider answers IsDrifted and GetInstanceTypes (required).
	CloudProvider cloudprovider.CloudProvider
	// Clock stamps condition transitions (default: the real clock).
	Clock clock.PassiveClock
	// RecheckInterval defaults to DefaultRecheckInterval.
	RecheckInterval time.Duration
}

// Controller is nodeclaim.drift.
type Controller struct {
	opts        Options
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if opts.CloudProvider == nil {
		errs = append(errs, errors.New("CloudProvider is required"))
	}
	if opts.RecheckInterval < 0 {
		errs = append(errs, errors.New("RecheckInterval must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("nodeclaim drift options: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RecheckInterval == 0 {
		opts.RecheckInterval = DefaultRecheckInterval
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds nodeclaim.drift to mgr. A NodePool change re-checks its
// NodeClaims, a node class change the NodeClaims launched from it.
func (c *Controller) Register(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).
		Named("nodeclaim.drift").
		For(&v1.NodeClaim{}).
		// Only spec changes of a NodePool can drift its nodes; its status
		// changes every few seconds.
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodeClaims(ctx, func(nc *v1.NodeClaim) bool { return nc.Labels[v1.LabelNodePool] == o.GetName() })
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	for _, obj := range c.opts.CloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(obj, c.opts.Client.Scheme())
		if err != nil {
			return fmt.Errorf("resolving node class kind %T: %w", obj, err)
		}
		gk := gvk.GroupKind()
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodeClaims(ctx, func(nc *v1.NodeClaim) bool { return refersTo(nc, gk, o.GetName()) })
		}))
	}
	if err := b.WithOptions(controller.Options{MaxConcurrentReconciles: 10}).Complete(reconcile.Func(c.Reconcile)); err != nil {
		return fmt.Errorf("registering nodeclaim.drift: %w", err)
	}
	return nil
}

func refersTo(nc *v1.NodeClaim, gk schema.GroupKind, name string) bool {
	ref := nc.Spec.NodeClassRef
	return ref != nil && ref.Group == gk.Group && ref.Kind == gk.Kind && ref.Name == name
}

func (c *Controller) nodeClaims(ctx context.Context, match func(*v1.NodeClaim) bool) []reconcile.Request {
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims for drift")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// Reconcile sets or clears nc's Drifted condition.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "nodeclaim.disruption.drift")
	nc := &v1.NodeClaim{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.nodeClasses.Manages(nc.Spec.NodeClassRef) || !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues(logging.NodePool, klog.KRef("", nc.Labels[v1.LabelNodePool])))
	stored := nc.DeepCopy()
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	var result reconcile.Result
	if !conds.IsTrue(v1.ConditionTypeLaunched) || nc.Labels[v1.LabelNodePool] == "" {
		// Nothing runs yet, so nothing can have drifted; and a NodeClaim
		// without a NodePool has no template to drift from.
		conds.Clear(v1.ConditionTypeDrifted)
	} else {
		np := &v1.NodePool{}
		if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: nc.Labels[v1.LabelNodePool]}, np); err != nil {
			// A NodeClaim without its NodePool is garbage collection's.
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		reason, msg, err := c.isDrifted(ctx, np, nc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if reason == "" {
			conds.Clear(v1.ConditionTypeDrifted)
		} else {
			conds.SetTrueWithReason(v1.ConditionTypeDrifted, string(reason), msg)
		}
		result.RequeueAfter = c.opts.RecheckInterval
	}
	if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		return result, nil
	}
	if err := c.opts.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching drifted condition of nodeclaim %s: %w", nc.Name, err))
	}
	if d := nc.StatusConditions().Get(v1.ConditionTypeDrifted); d != nil {
		log.FromContext(ctx).Info("nodeclaim drifted", logging.Reason, d.Reason, logging.Message, d.Message)
	}
	return result, nil
}

// isDrifted runs the checks in Karpenter's order; the first that finds
// drift names it.
func (c *Controller) isDrifted(ctx context.Context, np *v1.NodePool, nc *v1.NodeClaim) (cloudprovider.DriftReason, string, error) {
	if reason, msg := staticDrift(np, nc); reason != "" {
		return reason, msg, nil
	}
	if reason, msg := requirementsDrift(np, nc); reason != "" {
		return reason, msg, nil
	}
	its, err := c.opts.CloudProvider.GetInstanceTypes(ctx, np)
	switch {
	case cloudprovider.IsNodeClassNotReadyError(err):
		// Not knowing the instance types is not drift.
	case err != nil:
		return "", "", fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err)
	default:
		if reason, msg := instanceTypeDrift(its, nc); reason != "" {
			return reason, msg, nil
		}
	}
	reason, err := c.opts.CloudProvider.IsDrifted(ctx, nc)
	switch {
	case cloudprovider.IsNodeClaimNotFoundError(err), cloudprovider.IsNodeClaimNotOwned(err), cloudprovider.IsNodeClassNotReadyError(err):
		// The instance is gone (termination and GC handle it), is not this
		// cluster's (GC reports it), or the node class cannot be read: none
		// is drift.
		return "", "", nil
	case err != nil:
		return "", "", fmt.Errorf("asking the cloud provider whether nodeclaim %s drifted: %w", nc.Name, err)
	case reason != "":
		return reason, fmt.Sprintf("the cloud provider reports the instance drifted from node class %s: %s", nc.Spec.NodeClassRef.Name, reason), nil
	}
	return "", "", nil
}
