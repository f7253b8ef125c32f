package static

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Requeue intervals (Karpenter's static controllers look again every
// minute, and after 30 s when a limit held them back).
const (
	resync         = time.Minute
	blockedRequeue = 30 * time.Second
	unsynced       = time.Second
	// deletedTTL is how long a NodeClaim this controller deleted counts as
	// deleting before the cluster state shows it so.
	deletedTTL = 30 * time.Second
)

// ProvisionedReason labels the NodeClaims it creates in
// karpenter_nodeclaims_created_total (Karpenter's).
const ProvisionedReason = "provisioned"

// Creator creates NodeClaims exactly as the provisioner does (its
// CreateReplacements): the NodePool's template, the in-flight memory of the
// cluster state, the created metric.
type Creator interface {
	CreateReplacements(ctx context.Context, nodePools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string, replaces []types.UID) ([]*v1.NodeClaim, error)
}

// ClusterState is what the controller reads from pkg/state.
type ClusterState interface {
	Synced(ctx context.Context) bool
	ReadOnlyNodes() []*state.StateNode
}

// InstanceTypes is the cloud's instance types as the provisioner plans with
// them (NodeOverlays applied).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
}

// Options configure the controller.
type Options struct {
	Client        client.Client
	State         ClusterState
	Creator       Creator
	InstanceTypes InstanceTypes
	// NodeClasses are the node class kinds joiner serves: a NodePool of
	// another kind is another controller's.
	NodeClasses cloudprovider.NodeClassKinds
	Recorder    events.Recorder
	Clock       clock.Clock
	// Enabled is the StaticCapacity feature gate.
	Enabled bool
}

func (o *Options) validate() error {
	var errs []error
	for name, missing := range map[string]bool{
		"client": o.Client == nil, "cluster state": o.State == nil, "creator": o.Creator == nil,
		"instance types": o.InstanceTypes == nil, "recorder": o.Recorder == nil, "clock": o.Clock == nil,
	} {
		if missing {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(errs...)
}

// Controller is nodepool.static.
type Controller struct {
	opts Options

	mu sync.Mutex
	// deleted are the NodeClaims this controller deleted recently, by UID,
	// with when: counted as deleting until the state shows them so, so a
	// reconcile right after a scale-down does not delete more.
	deleted map[types.UID]time.Time
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("static nodepool options: %w", err)
	}
	return &Controller{opts: opts, deleted: map[types.UID]time.Time{}}, nil
}

// Register adds nodepool.static to mgr: a static NodePool is reconciled
// when it is created or its replicas or readiness change, and when one of
// its NodeClaims is created, starts deleting or is deleted.
func (c *Controller) Register(mgr manager.Manager) error {
	static := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.(*v1.NodePool).IsStatic() })
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
		}
		return nil
	})
	claimChanges := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	err := builder.ControllerManagedBy(mgr).
		Named("nodepool.static").
		For(&v1.NodePool{}, builder.WithPredicates(static, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, readinessChanged()))).
		Watches(&v1.NodeClaim{}, byLabel, builder.WithPredicates(claimChanges)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering nodepool.static: %w", err)
	}
	return nil
}

// readinessChanged passes a NodePool update whose Ready condition changed:
// a static NodePool waits for Ready before it launches.
func readinessChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.(*v1.NodePool).StatusConditions().IsTrue(v1.ConditionTypeReady) !=
			e.ObjectNew.(*v1.NodePool).StatusConditions().IsTrue(v1.ConditionTypeReady)
	}}
}

// Reconcile brings one static NodePool to its replicas.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.IsStatic() || np.DeletionTimestamp != nil || !c.opts.NodeClasses.Manages(np.Spec.Template.Spec.NodeClassRef) {
		return reconcile.Result{}, nil
	}
	if !c.opts.Enabled {
		c.opts.Recorder.Publish(events.Warning(np, events.FeatureGateDisabled, "Scale",
			"NodePool %s sets spec.replicas, which needs the StaticCapacity feature gate: joiner leaves it alone (no nodes are launched or removed for it) until it runs with --feature-gates=StaticCapacity=true (FEATURE_GATES)", np.Name))
		return reconcile.Result{}, nil
	}
	// Counting on a partial picture would launch nodes that exist.
	if !c.opts.State.Synced(ctx) {
		return reconcile.Result{RequeueAfter: unsynced}, nil
	}
	nodes := c.nodes(np.Name)
	count := disruption.CountStatic(nodes, np.Name)
	replicas := *np.Spec.Replicas
	switch {
	case int64(count.Active) > replicas:
		return c.scaleDown(ctx, np, nodes, int(int64(count.Active)-replicas))
	case int64(count.Active+count.Disrupting) < replicas:
		return c.scaleUp(ctx, np, count)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// nodes are the NodePool's NodeClaims as the disruption engine sees them:
// deleting (theirs, their Node's or this controller's recent delete) or
// being disrupted (marked by a disruption command in flight).
func (c *Controller) nodes(pool string) []disruption.Node {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	for uid, at := range c.deleted {
		if now.Sub(at) > deletedTTL {
			delete(c.deleted, uid)
		}
	}
	c.mu.Unlock()
	var out []disruption.Node
	for _, sn := range c.opts.State.ReadOnlyNodes() {
		if sn.NodeClaim == nil || sn.NodePool() != pool {
			continue
		}
		c.mu.Lock()
		_, deleted := c.deleted[sn.NodeClaim.UID]
		c.mu.Unlock()
		deleting := deleted || sn.NodeClaim.DeletionTimestamp != nil || (sn.Node != nil && sn.Node.DeletionTimestamp != nil)
		out = append(out, disruption.Node{
			Name: sn.Name(), Node: sn.Node, NodeClaim: sn.NodeClaim, NodePool: pool, Pods: sn.Pods,
			Initialized: sn.Initialized(),
			Deleting:    deleting,
			Disrupting:  sn.MarkedForDeletion && !deleting,
		})
	}
	return out
}
