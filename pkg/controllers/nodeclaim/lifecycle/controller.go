package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/controllers/ownwrites"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Defaults for Options.
const (
	DefaultRegistrationTTL         = 15 * time.Minute
	DefaultInitializationTTL       = 15 * time.Minute
	DefaultLaunchTTL               = 5 * time.Minute
	DefaultMaxConcurrentReconciles = 1000
	DefaultLaunchBackoffMax        = time.Hour
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Options configure the lifecycle controller.
type Options struct {
	// Client reads from the manager's cache and writes to the API server
	// (required).
	Client client.Client
	// CloudProvider launches instances (required).
	CloudProvider cloudprovider.CloudProvider
	// Recorder publishes events (required).
	Recorder events.Recorder
	// Clock is the time source (default: the real clock).
	Clock clock.Clock
	// RegistrationTTL is how long a launched NodeClaim may wait for its
	// Node before it is deleted (default DefaultRegistrationTTL).
	RegistrationTTL time.Duration
	// InitializationTTL is how long a registered NodeClaim may wait to be
	// initialized before it is deleted (default DefaultInitializationTTL).
	InitializationTTL time.Duration
	// Nominations names the pods the provisioner nominated to a NodeClaim,
	// told when it is deleted for not initializing (optional).
	Nominations Nominations
	// Room holds the room of the pods planned for a NodeClaim on its Node
	// just before registration makes the Node schedulable (optional: the
	// provisioner's nomination writer).
	Room RoomHolder
	// LaunchTTL is how long a NodeClaim may fail to launch before it is
	// deleted (default DefaultLaunchTTL).
	LaunchTTL time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles (default
	// DefaultMaxConcurrentReconciles, Karpenter's value at one core). A
	// reconcile mostly waits on the API server and the cloud, so the
	// workers, not the CPU, bound how many NodeClaims a burst moves at once.
	MaxConcurrentReconciles int
	// LaunchBackoffMax caps the wait before launching again what failed to
	// register or initialise; the wait doubles from the TTL that expired
	// with each consecutive failure (default DefaultLaunchBackoffMax).
	LaunchBackoffMax time.Duration
	// APIReader reads from the API server past the cache: NodePools when
	// their launch health record is updated, and the Node or NodeClaim
	// whose patch conflicted, to patch again at once (optional: without
	// it, launch health reads through Client and a conflict waits for the
	// next reconcile).
	APIReader client.Reader
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("CloudProvider is required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if o.RegistrationTTL < 0 || o.InitializationTTL < 0 || o.LaunchTTL < 0 || o.MaxConcurrentReconciles < 0 || o.LaunchBackoffMax < 0 {
		errs = append(errs, errors.New("RegistrationTTL, InitializationTTL, LaunchTTL, MaxConcurrentReconciles and LaunchBackoffMax must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("lifecycle options: %w", errors.Join(errs...))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.RegistrationTTL == 0 {
		o.RegistrationTTL = DefaultRegistrationTTL
	}
	if o.InitializationTTL == 0 {
		o.InitializationTTL = DefaultInitializationTTL
	}
	if o.LaunchTTL == 0 {
		o.LaunchTTL = DefaultLaunchTTL
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.LaunchBackoffMax == 0 {
		o.LaunchBackoffMax = DefaultLaunchBackoffMax
	}
	return nil
}

// Controller is the NodeClaim lifecycle controller (nodeclaim.lifecycle).
type Controller struct {
	opts Options
	// nodeClasses are the node class kinds the cloud provider serves;
	// NodeClaims referencing other kinds are not ours.
	nodeClasses cloudprovider.NodeClassKinds
	// written tells which cached NodeClaims are older than this
	// controller's own last write to them (see ownwrites.Record).
	written *ownwrites.Record
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, nodeClasses: kinds, written: ownwrites.New()}, nil
}

// Register adds nodeclaim.lifecycle to mgr. (Deleting a Node deletes its
// NodeClaim too; node termination does that, for the Nodes joiner owns.)
// It lists by the field indexes of state.RegisterFieldIndexes, which must be
// registered on mgr first.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("nodeclaim.lifecycle").
		For(&v1.NodeClaim{}).
		// A Node appearing or changing (Ready, taints removed, resources
		// registered) moves its NodeClaim along.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsForNode)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles,
			// Failed launches retry within a minute, so liveness gets to
			// judge them close to their TTL (the default backoff grows to
			// 16 minutes and would ignore liveness's requeue).
			RateLimiter: workqueue.NewTypedMaxOfRateLimiter[reconcile.Request](
				workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute),
				&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(50), 500)},
			),
		}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering nodeclaim.lifecycle: %w", err)
	}
	return nil
}

func (c *Controller) nodeClaimsForNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims for node", logging.Node, klog.KObj(node))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// stepResult is what one lifecycle step reports.
type stepResult struct {
	// requeueAfter > 0 asks to look again after that long.
	requeueAfter time.Duration
	// deleted means the step deleted the NodeClaim: later steps and the
	// status patch are skipped.
	deleted bool
}

type step func(ctx context.Context, nc *v1.NodeClaim) (stepResult, error)

// Reconcile runs launch, registration, initialization and liveness in
// order on one NodeClaim and patches its metadata and status once.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "nodeclaim.lifecycle")
	nc := &v1.NodeClaim{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.written.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.written.Stale(req.NamespacedName, nc.ResourceVersion) {
		// The watch event of the write enqueues the NodeClaim again; the
		// requeue only covers a watch that never delivers it.
		return reconcile.Result{RequeueAfter: staleRequeue}, nil
	}
	if !c.manages(nc) {
		return reconcile.Result{}, nil
	}
	if nc.DeletionTimestamp != nil {
		// Termination owns a deleting NodeClaim, but it cannot terminate an
		// instance whose provider ID was never recorded.
		return reconcile.Result{}, c.releaseDeleting(ctx, nc)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues(logging.NodePool, klog.KRef("", nc.Labels[v1.LabelNodePool])))

	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		before := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
		if err := c.opts.Client.Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return quietConflict(fmt.Errorf("adding finalizer to nodeclaim %s: %w", nc.Name, err))
		}
		c.written.Wrote(req.NamespacedName, before.ResourceVersion, nc.ResourceVersion)
	}

	stored := nc.DeepCopy()
	nc.StatusConditions().WithClock(c.opts.Clock).Initialize()

	var (
		errs    []error
		requeue time.Duration
		deleted bool
	)
	// node is the NodeClaim's Node as registration left it: initialization
	// judges what registration just wrote instead of the cache's older copy
	// (which still has the unregistered taint), so a Node that is ready
	// when it registers is initialised in the same reconcile.
	var node *corev1.Node
	steps := []step{
		c.launch,
		func(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) {
			res, synced, err := c.register(ctx, nc)
			node = synced
			return res, err
		},
		func(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) { return c.initialize(ctx, nc, node) },
		c.liveness,
	}
	for _, s := range steps {
		res, err := s(ctx, nc)
		if err != nil {
			errs = append(errs, err)
		}
		if res.requeueAfter > 0 && (requeue == 0 || res.requeueAfter < requeue) {
			requeue = res.requeueAfter
		}
		if res.deleted {
			deleted = true
			break
		}
	}
	if !deleted {
		if err := c.patch(ctx, stored, nc); err != nil {
			if released, rerr := c.releaseIfGone(ctx, stored, nc, err); released {
				return reconcile.Result{}, rerr
			}
			errs = append(errs, err)
		} else {
			countTransitions(stored, nc)
			if !stored.StatusConditions().IsTrue(v1.ConditionTypeInitialized) && nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
				c.recordSuccess(ctx, nc)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return quietConflict(err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// countTransitions counts the Registered and Initialized conditions that a
// successful status patch turned True. Counting only after the patch keeps
// a reconcile whose patch lost a conflict from counting the same
// transition again on its retry.
func countTransitions(stored, patched *v1.NodeClaim) {
	pool := patched.Labels[v1.LabelNodePool]
	for typ, counter := range map[string]*prometheus.CounterVec{
		v1.ConditionTypeRegistered:  metrics.NodeClaimsRegistered,
		v1.ConditionTypeInitialized: metrics.NodeClaimsInitialized,
	} {
		if !stored.StatusConditions().IsTrue(typ) && patched.StatusConditions().IsTrue(typ) {
			counter.WithLabelValues(pool).Inc()
			if typ == v1.ConditionTypeRegistered {
				// The NodeClaim's Node joined: Karpenter's node creation.
				metrics.NodesCreated.WithLabelValues(pool).Inc()
			}
		}
	}
}

// manages reports whether nc's node class is one the cloud provider serves.
func (c *Controller) manages(nc *v1.NodeClaim) bool {
	return c.nodeClasses.Manages(nc.Spec.NodeClassRef)
}

// patch writes nc's metadata (labels, annotations) and then its status, each
// only when it changed, with optimistic locking so a concurrent writer is
// never overwritten.
func (c *Controller) patch(ctx context.Context, stored, nc *v1.NodeClaim) error {
	base := stored
	if !equality.Semantic.DeepEqual(stored.Labels, nc.Labels) || !equality.Semantic.DeepEqual(stored.Annotations, nc.Annotations) {
		obj := stored.DeepCopy()
		obj.Labels, obj.Annotations = nc.Labels, nc.Annotations
		if err := c.opts.Client.Patch(ctx, obj, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching nodeclaim %s metadata: %w", nc.Name, err)
		}
		c.written.Wrote(client.ObjectKeyFromObject(nc), stored.ResourceVersion, obj.ResourceVersion)
		base = obj
	}
	if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		return nil
	}
	obj := base.DeepCopy()
	obj.Status = nc.Status
	err := c.opts.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	// Other controllers write a NodeClaim's status too, just as it
	// registers and initialises (Consolidatable; until 2026-11-27 the pod
	// event time too, which caused most conflicts in bursts), and
	// a conflict used to cost the whole step a second's wait: a third of
	// the status patches of a 500-node scale-up conflicted. When the
	// NodeClaim read from the API server differs from the one this
	// reconcile read only in what others own, this reconcile's changes are
	// laid over it and patched again at once. A change to what this
	// controller owns (a reconcile of an older copy than ours, a namesake
	// NodeClaim) is left to the next reconcile, as before.
	retried := false
	for attempt := 1; err != nil && apierrors.IsConflict(err) && c.opts.APIReader != nil && attempt < statusPatchAttempts; attempt++ {
		fresh := &v1.NodeClaim{}
		if gerr := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(nc), fresh); gerr != nil {
			break
		}
		if fresh.UID != stored.UID || !ownStatusEqual(stored, fresh) {
			break
		}
		retried = true
		base = fresh
		obj = fresh.DeepCopy()
		overlayStatus(stored, nc, obj)
		err = c.opts.Client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	}
	if err != nil {
		return fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err)
	}
	key := client.ObjectKeyFromObject(nc)
	c.written.Wrote(key, base.ResourceVersion, obj.ResourceVersion)
	if retried {
		// The cache may still hold the version this reconcile read: it is
		// older than this write too.
		c.written.Wrote(key, stored.ResourceVersion, "")
	}
	return nil
}

// statusPatchAttempts bounds patch's status writes of one reconcile.
const statusPatchAttempts = 3

// ownedConditions are the NodeClaim conditions this controller writes
// (Ready is their roll-up).
var ownedConditions = []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeReady}

// ownStatusEqual reports whether a and b agree on every status field and
// condition this controller writes.
func ownStatusEqual(a, b *v1.NodeClaim) bool {
	sa, sb := &a.Status, &b.Status
	if sa.NodeName != sb.NodeName || sa.ProviderID != sb.ProviderID || sa.ImageID != sb.ImageID ||
		!equality.Semantic.DeepEqual(sa.Capacity, sb.Capacity) || !equality.Semantic.DeepEqual(sa.Allocatable, sb.Allocatable) {
		return false
	}
	for _, typ := range ownedConditions {
		ca, cb := meta.FindStatusCondition(sa.Conditions, typ), meta.FindStatusCondition(sb.Conditions, typ)
		if (ca == nil) != (cb == nil) || (ca != nil && !equality.Semantic.DeepEqual(*ca, *cb)) {
			return false
		}
	}
	return true
}

// overlayStatus applies to fresh the status changes one reconcile made
// from stored to changed: each field this controller writes that differs,
// and each condition set, changed or removed. What fresh holds otherwise
// (other controllers' conditions, the pod event time) stays.
func overlayStatus(stored, changed, fresh *v1.NodeClaim) {
	s, n, f := &stored.Status, &changed.Status, &fresh.Status
	if s.NodeName != n.NodeName {
		f.NodeName = n.NodeName
	}
	if s.ProviderID != n.ProviderID {
		f.ProviderID = n.ProviderID
	}
	if s.ImageID != n.ImageID {
		f.ImageID = n.ImageID
	}
	if !equality.Semantic.DeepEqual(s.Capacity, n.Capacity) {
		f.Capacity = n.Capacity.DeepCopy()
	}
	if !equality.Semantic.DeepEqual(s.Allocatable, n.Allocatable) {
		f.Allocatable = n.Allocatable.DeepCopy()
	}
	for _, cond := range n.Conditions {
		if old := meta.FindStatusCondition(s.Conditions, cond.Type); old == nil || !equality.Semantic.DeepEqual(*old, cond) {
			meta.RemoveStatusCondition(&f.Conditions, cond.Type)
			f.Conditions = append(f.Conditions, cond)
		}
	}
	for _, cond := range s.Conditions {
		if meta.FindStatusCondition(n.Conditions, cond.Type) == nil {
			meta.RemoveStatusCondition(&f.Conditions, cond.Type)
		}
	}
}

// deleteNodeClaim deletes nc (already gone is fine).
func (c *Controller) deleteNodeClaim(ctx context.Context, nc *v1.NodeClaim) error {
	if err := c.opts.Client.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

// quietConflict turns an optimistic-lock conflict into a plain requeue: the
// cache will deliver the newer object and the reconcile starts over.
func quietConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	}
	return reconcile.Result{}, err
}

// staleRequeue is how soon a reconcile that read a NodeClaim older than its
// own last write looks again if no watch event came first.
const staleRequeue = 2 * time.Second

// conflictRequeue is how soon a reconcile that lost an optimistic-lock race
// runs again.
const conflictRequeue = time.Second

// RegistrationTTL is the registration TTL in force (its default filled).
func (c *Controller) RegistrationTTL() time.Duration { return c.opts.RegistrationTTL }

// InitializationTTL is the initialisation TTL in force (its default filled).
func (c *Controller) InitializationTTL() time.Duration { return c.opts.InitializationTTL }
