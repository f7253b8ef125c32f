// Package counter writes each NodePool's status.resources (the summed
// capacity of its nodes and in-flight NodeClaims, with "nodes" their count)
// and status.nodes from cluster state. It only writes when the state is
// synced, so a freshly started controller never reports a NodePool as
// emptier than it is.
package counter

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Requeue intervals.
const (
	// ResyncPeriod is how often a NodePool's counts are recomputed even
	// without events (cluster state lags the informer events that trigger
	// a reconcile).
	ResyncPeriod = 5 * time.Second
	// unsyncedRequeue is how soon to retry while the state is not synced.
	unsyncedRequeue = time.Second
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=get;patch;update

// Options configure the counter.
type Options struct {
	// Client reads NodePools from the cache and patches their status
	// (required).
	Client client.Client
	// Cluster is the cluster state the counts come from (required).
	Cluster *state.Cluster
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.Cluster == nil {
		errs = append(errs, errors.New("Cluster is required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("nodepool counter options: %w", errors.Join(errs...))
	}
	return nil
}

// Controller is nodepool.counter.
type Controller struct{ opts Options }

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Controller{opts: opts}, nil
}

// Register adds nodepool.counter to mgr. A NodeClaim created or deleted
// triggers its NodePool at once; capacity that changes at launch or
// registration is picked up by the periodic resync. Node updates are not
// watched: kubelets (and kwok) update Nodes constantly, and each reconcile
// checks Synced against the API server.
func (c *Controller) Register(mgr manager.Manager) error {
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
		}
		return nil
	})
	createOrDelete := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	err := builder.ControllerManagedBy(mgr).
		Named("nodepool.counter").
		// Its own status writes do not bump the generation.
		For(&v1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodeClaim{}, byLabel, builder.WithPredicates(createOrDelete)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 5}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering nodepool.counter: %w", err)
	}
	return nil
}

// Reconcile writes one NodePool's counts.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.opts.Cluster.Synced(ctx) {
		return reconcile.Result{RequeueAfter: unsyncedRequeue}, nil
	}
	use := c.opts.Cluster.NodePoolUsage()[np.Name]
	if use == nil {
		use = corev1.ResourceList{v1.ResourceNodes: resource.MustParse("0")}
	}
	count := use[v1.ResourceNodes]
	nodes := count.Value()

	stored := np.DeepCopy()
	np.Status.Resources = use
	np.Status.Nodes = &nodes
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{RequeueAfter: ResyncPeriod}, nil
	}
	if err := c.opts.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: unsyncedRequeue}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching nodepool %s status counts: %w", np.Name, err)
	}
	return reconcile.Result{RequeueAfter: ResyncPeriod}, nil
}
