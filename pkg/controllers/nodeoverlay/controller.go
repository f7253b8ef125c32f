// Package nodeoverlay evaluates the cluster's NodeOverlays (Karpenter's
// NodeOverlay feature gate) against every NodePool's instance types, puts
// the result in force in an overlay.Store, and reports each overlay's
// ValidationSucceeded condition. Overlays of equal weight that set
// different values for the same offering or resource conflict: both are
// ValidationSucceeded=False (reason Conflict) and no overlay at all is in
// force until the conflict is resolved. With the gate off, each overlay
// gets an event naming the gate and none is applied.
package nodeoverlay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// ReasonConflict is the ValidationSucceeded=False reason of overlays that
// conflict.
const ReasonConflict = "Conflict"

// resync re-evaluates against instance types and offerings that change
// without an event (prices, availability).
const resync = 5 * time.Minute

// InstanceTypes is the cloud's own instance types, before any overlay.
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
}

// Options configure the controller.
type Options struct {
	Client client.Client
	// Cloud gives the instance types the overlays are evaluated against
	// (the undecorated cloud provider).
	Cloud InstanceTypes
	// NodeClasses are the cloud's node class kinds, watched so a node
	// class change re-evaluates.
	NodeClasses []client.Object
	Store       *overlay.Store
	Recorder    events.Recorder
	Clock       clock.Clock
	// Enabled is the NodeOverlay feature gate.
	Enabled bool
}

func (o *Options) validate() error {
	var errs []error
	for name, missing := range map[string]bool{
		"client": o.Client == nil, "cloud": o.Cloud == nil, "store": o.Store == nil, "recorder": o.Recorder == nil, "clock": o.Clock == nil,
	} {
		if missing {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(errs...)
}

// Controller is nodeoverlay.validation.
type Controller struct{ opts Options }

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("nodeoverlay options: %w", err)
	}
	return &Controller{opts: opts}, nil
}

// singleton is the one request every event maps to: each pass evaluates
// every overlay against every NodePool.
var singleton = reconcile.Request{NamespacedName: client.ObjectKey{Name: "nodeoverlays"}}

// Register adds the controller to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{singleton} })
	b := builder.ControllerManagedBy(mgr).
		Named("nodeoverlay.validation").
		Watches(&v1alpha1.NodeOverlay{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	for _, nc := range c.opts.NodeClasses {
		b = b.Watches(nc, all)
	}
	if err := b.Complete(reconcile.Func(c.Reconcile)); err != nil {
		return fmt.Errorf("registering nodeoverlay.validation: %w", err)
	}
	// The first evaluation does not wait for an event: NodePools are
	// skipped until it ran.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		_, err := c.Reconcile(ctx, singleton)
		if err != nil {
			log.FromContext(ctx).Error(err, "evaluating nodeoverlays")
		}
		return nil
	}))
}

// Reconcile evaluates every overlay and puts the result in force.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var overlays v1alpha1.NodeOverlayList
	if err := c.opts.Client.List(ctx, &overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	if !c.opts.Enabled {
		for i := range overlays.Items {
			o := &overlays.Items[i]
			c.opts.Recorder.Publish(events.Warning(o, events.FeatureGateDisabled, "Evaluate",
				"NodeOverlay %s is not applied: it needs the NodeOverlay feature gate; run joiner with --feature-gates=NodeOverlay=true (FEATURE_GATES)", o.Name))
		}
		c.opts.Store.Set(nil)
		return reconcile.Result{}, nil
	}
	var pools v1.NodePoolList
	if err := c.opts.Client.List(ctx, &pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodepools: %w", err)
	}
	typesByPool := map[string][]*scheduling.InstanceType{}
	var evaluated []*v1.NodePool
	var errs []error
	for i := range pools.Items {
		np := &pools.Items[i]
		its, err := c.opts.Cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			// One NodePool whose node class is missing must not hold back
			// the others.
			errs = append(errs, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err))
			continue
		}
		typesByPool[np.Name] = its
		evaluated = append(evaluated, np)
	}
	list := make([]*v1alpha1.NodeOverlay, len(overlays.Items))
	for i := range overlays.Items {
		list[i] = &overlays.Items[i]
	}
	conflicts := overlay.Evaluate(list, evaluated, typesByPool)
	why := map[string][]string{}
	for _, cf := range conflicts {
		why[cf.A] = append(why[cf.A], fmt.Sprintf("conflicts with NodeOverlay %s of the same weight on %s", cf.B, cf.What))
		why[cf.B] = append(why[cf.B], fmt.Sprintf("conflicts with NodeOverlay %s of the same weight on %s", cf.A, cf.What))
	}
	if err := c.writeStatuses(ctx, list, why); err != nil {
		return reconcile.Result{}, err
	}
	if len(conflicts) > 0 {
		// Atomic: a partial set would change plans in ways no overlay
		// alone asks for.
		c.opts.Store.Set(nil)
		log.FromContext(ctx).Info("nodeoverlays conflict; none is applied until resolved", logging.Conflicts, len(conflicts))
	} else {
		c.opts.Store.Set(list)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// writeStatuses sets each overlay's ValidationSucceeded (and Ready).
func (c *Controller) writeStatuses(ctx context.Context, list []*v1alpha1.NodeOverlay, why map[string][]string) error {
	var errs []error
	for _, o := range list {
		stored := o.DeepCopy()
		conds := o.StatusConditions().WithClock(c.opts.Clock)
		if reasons := why[o.Name]; len(reasons) > 0 {
			slices.Sort(reasons)
			conds.SetFalse(v1alpha1.ConditionTypeValidationSucceeded, ReasonConflict,
				strings.Join(slices.Compact(reasons), "; ")+"; no NodeOverlay is applied until the conflict is resolved: give one a higher weight or make them agree")
		} else {
			conds.SetTrue(v1alpha1.ConditionTypeValidationSucceeded)
		}
		if equality.Semantic.DeepEqual(stored.Status, o.Status) {
			continue
		}
		if err := c.opts.Client.Status().Patch(ctx, o, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("patching nodeoverlay %s status: %w", o.Name, err))
		}
	}
	return errors.Join(errs...)
}
