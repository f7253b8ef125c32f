// Package health is node repair (Karpenter's node.health, behind the
// NodeRepair feature gate): a managed Node whose condition matches one of
// the cloud provider's repair policies for longer than the policy
// tolerates is replaced, by deleting its NodeClaim with the termination
// deadline set to now, so the drain does not wait for PDBs. It never
// repairs more than 20% (rounded up) of a NodePool's nodes at once: when
// more are unhealthy, something cluster-wide is wrong (a bad image, a
// broken CNI) and replacing them all would only make it worse; it reports
// NodeRepairBlocked instead.
package health

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Tunables, Karpenter's values.
const (
	// MaxUnhealthyFraction of a NodePool's nodes may be repaired at once.
	MaxUnhealthyFraction = 0.2
	// BlockedRequeue is how soon a blocked repair is looked at again.
	BlockedRequeue = 5 * time.Minute
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;update;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Options configure node repair.
type Options struct {
	// Client reads from the cache, patches and deletes NodeClaims
	// (required).
	Client client.Client
	// CloudProvider declares the repair policies (required; a provider
	// without cloudprovider.RepairPolicyProvider repairs nothing).
	CloudProvider cloudprovider.CloudProvider
	// Recorder publishes events (required).
	Recorder events.Recorder
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
}

// Controller is node.health.
type Controller struct {
	opts        Options
	policies    []cloudprovider.RepairPolicy
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
	if opts.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("node health options: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, policies: cloudprovider.RepairPoliciesOf(opts.CloudProvider), nodeClasses: kinds}, nil
}

// Register adds node.health to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("node.health").
		For(&corev1.Node{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering node.health: %w", err)
	}
	return nil
}

// Unhealthy returns the first policy node has violated for longer than it
// tolerates at now; otherwise nil and, when a policy's condition already
// matches, how long until it would be violated (0 when none matches).
func Unhealthy(node *corev1.Node, policies []cloudprovider.RepairPolicy, now time.Time) (*cloudprovider.RepairPolicy, time.Duration) {
	var next time.Duration
	for i, p := range policies {
		cond := condition(node, p.ConditionType)
		if cond == nil || cond.Status != p.ConditionStatus {
			continue
		}
		left := cond.LastTransitionTime.Add(p.TolerationDuration).Sub(now)
		if left <= 0 {
			return &policies[i], 0
		}
		if next == 0 || left < next {
			next = left
		}
	}
	return nil, next
}

// matchesAny reports whether node has a condition any policy names, in the
// policy's status, however briefly: such nodes count against the 20%.
func matchesAny(node *corev1.Node, policies []cloudprovider.RepairPolicy) bool {
	for _, p := range policies {
		if cond := condition(node, p.ConditionType); cond != nil && cond.Status == p.ConditionStatus {
			return true
		}
	}
	return false
}

// RepairAllowed reports whether a pool of total nodes, unhealthy of them,
// may repair: at most MaxUnhealthyFraction of them, rounded up.
func RepairAllowed(total, unhealthy int) bool {
	return unhealthy <= int(math.Ceil(float64(total)*MaxUnhealthyFraction))
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// Reconcile repairs node when a policy says it is unhealthy and its pool
// allows it.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "node.health")
	if len(c.policies) == 0 {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	nc, err := c.nodeClaimOf(ctx, node)
	if err != nil || nc == nil {
		return reconcile.Result{}, err
	}
	policy, next := Unhealthy(node, c.policies, c.opts.Clock.Now())
	if policy == nil {
		return reconcile.Result{RequeueAfter: next}, nil
	}
	pool := nc.Labels[v1.LabelNodePool]
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues(logging.NodeClaim, klog.KObj(nc), logging.NodePool, klog.KRef("", pool)))
	total, unhealthy, err := c.poolHealth(ctx, pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !RepairAllowed(total, unhealthy) {
		msg := fmt.Sprintf("not repairing Node %s (%s=%s for over %s): %d of the %d nodes of NodePool %s are unhealthy, more than %d%%; fix the common cause (image, network, CNI) first",
			node.Name, policy.ConditionType, policy.ConditionStatus, policy.TolerationDuration, unhealthy, total, orCluster(pool), int(MaxUnhealthyFraction*100))
		evts := []events.Event{events.Warning(node, events.NodeRepairBlocked, "Repair", "%s", msg)}
		np := &v1.NodePool{}
		if pool != "" && c.opts.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
			evts = append(evts, events.Warning(np, events.NodeRepairBlocked, "Repair", "%s", msg))
		}
		c.opts.Recorder.Publish(evts...)
		return reconcile.Result{RequeueAfter: BlockedRequeue}, nil
	}
	return reconcile.Result{}, c.repair(ctx, node, nc, policy)
}

// repair deletes nc with its termination deadline set to now: pods are
// deleted without waiting for PDBs, as the node cannot run them anyway.
func (c *Controller) repair(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim, policy *cloudprovider.RepairPolicy) error {
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] = c.opts.Clock.Now().UTC().Format(time.RFC3339)
	if err := c.opts.Client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the termination deadline of nodeclaim %s: %w", nc.Name, err))
	}
	if err := c.opts.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("deleting unhealthy nodeclaim %s: %w", nc.Name, err))
	}
	pool, capacityType := nc.Labels[v1.LabelNodePool], nc.Labels[v1.LabelCapacityType]
	metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues(string(policy.ConditionType), pool, capacityType).Inc()
	metrics.NodeClaimsDisrupted.WithLabelValues(metrics.DisruptionReasonUnhealthy, pool, capacityType).Inc()
	msg := fmt.Sprintf("Node %s has had %s=%s for over %s; deleting NodeClaim %s so it is replaced (node repair)", node.Name, policy.ConditionType, policy.ConditionStatus, policy.TolerationDuration, nc.Name)
	c.opts.Recorder.Publish(events.Warning(node, events.Unhealthy, "Repair", "%s", msg), events.Warning(nc, events.Unhealthy, "Repair", "%s", msg))
	log.FromContext(ctx).Info("repairing unhealthy node", logging.Condition, policy.ConditionType, logging.Status, policy.ConditionStatus)
	return nil
}

// nodeClaimOf returns the NodeClaim joiner launched node for (its owner,
// with the same provider ID), or nil when node is not joiner's.
func (c *Controller) nodeClaimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	for _, o := range node.OwnerReferences {
		if o.Kind != "NodeClaim" || o.APIVersion != v1.SchemeGroupVersion.String() {
			continue
		}
		nc := &v1.NodeClaim{}
		if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: o.Name}, nc); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("getting nodeclaim %s of node %s: %w", o.Name, node.Name, err))
		}
		if nc.UID != o.UID || nc.Status.ProviderID != node.Spec.ProviderID || !nc.DeletionTimestamp.IsZero() || !c.nodeClasses.Manages(nc.Spec.NodeClassRef) {
			return nil, nil
		}
		return nc, nil
	}
	return nil, nil
}

// poolHealth counts the pool's managed nodes and those matching a policy
// (every managed node when pool is "").
func (c *Controller) poolHealth(ctx context.Context, pool string) (total, unhealthy int, err error) {
	list := &corev1.NodeList{}
	opts := []client.ListOption{client.HasLabels{v1.LabelNodePool}}
	if pool != "" {
		opts = []client.ListOption{client.MatchingLabels{v1.LabelNodePool: pool}}
	}
	if err := c.opts.Client.List(ctx, list, opts...); err != nil {
		return 0, 0, fmt.Errorf("listing nodes of nodepool %s: %w", pool, err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if !n.DeletionTimestamp.IsZero() {
			continue
		}
		total++
		if matchesAny(n, c.policies) {
			unhealthy++
		}
	}
	return total, unhealthy, nil
}

func orCluster(pool string) string {
	if pool == "" {
		return "(none: counted cluster-wide)"
	}
	return pool
}
