// Package termination finishes deleted NodeClaims: it records the
// terminationGracePeriod deadline, deletes the NodeClaim's Node (whose own
// termination drains it), terminates the instance, and only then releases
// the karpenter.sh/termination finalizer, so a NodeClaim never disappears
// while its instance still runs and bills.
package termination

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/controllers/optimistic"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/state"
)

// instancePollInterval is how often a terminating instance is checked.
// Cloud termination raises no Kubernetes event, so it is polled.
const instancePollInterval = 2 * time.Second

// Options are the controller's dependencies.
type Options struct {
	Client client.Client
	// APIReader reads from the API server itself (the manager's
	// GetAPIReader; required): a write that conflicts on the cache's copy
	// is redone on the API server's (optimistic.Patch).
	APIReader     client.Reader
	CloudProvider cloudprovider.CloudProvider
	Recorder      events.Recorder
	Clock         clock.Clock
}

// Controller finalizes deleted NodeClaims.
type Controller struct {
	opts Options
	// nodeClasses are the node class kinds the cloud provider serves;
	// NodeClaims of other kinds belong to another controller.
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and builds the controller.
func NewController(opts Options) (*Controller, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("nodeclaim termination: Client is required")
	case opts.APIReader == nil:
		return nil, errors.New("nodeclaim termination: APIReader is required")
	case opts.CloudProvider == nil:
		return nil, errors.New("nodeclaim termination: CloudProvider is required")
	case opts.Recorder == nil:
		return nil, errors.New("nodeclaim termination: Recorder is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("nodeclaim termination: %w", err)
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds the controller to mgr. It wakes on NodeClaims being deleted
// and on their Nodes going away (through the Node's owner reference). It
// lists by the field indexes of state.RegisterFieldIndexes, which must be
// registered on mgr first.
func (c *Controller) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.termination").
		WithOptions(controller.Options{MaxConcurrentReconciles: 50}).
		For(&v1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetDeletionTimestamp() != nil
		}))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(ownerNodeClaims)).
		Complete(c)
}

// ownerNodeClaims maps a Node to the NodeClaims that own it.
func ownerNodeClaims(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "NodeClaim" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ref.Name}})
		}
	}
	return out
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete

// Reconcile runs the finalization phases in order.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "nodeclaim.termination")
	nc := &v1.NodeClaim{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if !c.nodeClasses.Manages(nc.Spec.NodeClassRef) {
		// Another controller's NodeClaim (Karpenter, during a migration).
		return reconcile.Result{}, nil
	}

	if err := c.recordDeadline(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	nodesLeft, err := c.deleteNodes(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !nodesLeft && !InstanceTerminationRecorded(nc) {
		// The cache says no Node is left; the API server decides, once,
		// before the instance goes: a Node the cache has not seen (or a
		// launch it has not recorded) would go with the instance, its
		// pods undrained, PodDisruptionBudgets or not.
		fresh, err := c.liveNodeClaim(ctx, nc)
		if err != nil || fresh == nil {
			return reconcile.Result{}, err
		}
		nc = fresh
		if nodesLeft, err = c.liveNodesLeft(ctx, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	if nodesLeft {
		// The Node's termination drains it; its removal wakes us through
		// the owner-reference watch. The requeue covers Nodes that lost it.
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	gone, err := TerminateInstance(ctx, c.opts.CloudProvider, c.opts.Recorder, nc, nc)
	if err == nil && !gone {
		err = c.recordInstanceTerminating(ctx, nc)
	}
	if err != nil || !gone {
		return reconcile.Result{RequeueAfter: instancePollInterval}, err
	}
	// The API server may answer the last finalizer's removal with the
	// NodeClaim as deleted: what the metrics need is taken before.
	pool, capacityType, deleted := nc.Labels[v1.LabelNodePool], nc.Labels[v1.LabelCapacityType], nc.DeletionTimestamp.Time
	terminating := nc.StatusConditions().Get(v1.ConditionTypeInstanceTerminating)
	wrote, err := optimistic.Patch(ctx, c.opts.APIReader, nc, func(nc *v1.NodeClaim) bool {
		return controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	}, func(nc *v1.NodeClaim, p client.Patch) error {
		return c.opts.Client.Patch(ctx, nc, p)
	})
	if err != nil || !wrote {
		// Not written: gone already, or the API server's copy had no
		// finalizer left to remove (a pass on a copy the cache had not
		// updated), so nothing is counted twice.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	metrics.NodeClaimsTerminated.WithLabelValues(pool, capacityType).Inc()
	metrics.NodeClaimsTerminationDuration.WithLabelValues(pool).Observe(c.opts.Clock.Since(deleted).Seconds())
	if terminating != nil && terminating.Status == metav1.ConditionTrue {
		metrics.NodeClaimsInstanceTerminationDuration.WithLabelValues(pool).Observe(c.opts.Clock.Since(terminating.LastTransitionTime.Time).Seconds())
	}
	log.FromContext(ctx).Info("deleted nodeclaim", logging.ProviderID, nc.Status.ProviderID)
	return reconcile.Result{}, nil
}

// recordDeadline stamps the terminationGracePeriod deadline on the
// NodeClaim once, so the drain (and a restarted controller) agree on it.
func (c *Controller) recordDeadline(ctx context.Context, nc *v1.NodeClaim) error {
	if nc.Spec.TerminationGracePeriod == nil || nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] != "" {
		return nil
	}
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	deadline := nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration)
	nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] = deadline.UTC().Format(time.RFC3339)
	if err := c.opts.Client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("recording termination deadline: %w", client.IgnoreNotFound(err))
	}
	return nil
}

// deleteNodes deletes the NodeClaim's Nodes and reports whether any remain.
func (c *Controller) deleteNodes(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	if nc.Status.ProviderID == "" {
		return false, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.opts.Client.List(ctx, nodes, client.MatchingFields{state.IndexNodeProviderID: nc.Status.ProviderID}); err != nil {
		return false, fmt.Errorf("listing nodes: %w", err)
	}
	left := false
	for i := range nodes.Items {
		n := &nodes.Items[i]
		left = true
		if n.DeletionTimestamp == nil {
			if err := c.opts.Client.Delete(ctx, n); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("deleting node %s: %w", n.Name, err)
			}
			c.opts.Recorder.Publish(events.Normal(nc, events.NodeDeleted, "Delete", "Deleting node %s: its NodeClaim is being deleted", n.Name))
		}
	}
	return left, nil
}

// liveNodeClaim reads nc from the API server: its launch and its Node
// as recorded there, not as the cache has them. It returns nil when nc is
// gone or the name now holds another NodeClaim (not this pass's to finish).
func (c *Controller) liveNodeClaim(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	fresh := &v1.NodeClaim{}
	if err := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(nc), fresh); err != nil {
		return nil, client.IgnoreNotFound(fmt.Errorf("reading nodeclaim %s before terminating its instance: %w", nc.Name, err))
	}
	if fresh.UID != nc.UID || fresh.DeletionTimestamp == nil {
		return nil, nil
	}
	return fresh, nil
}

// liveNodesLeft reports whether nc's Node still exists in the API server
// with nc's provider ID, and deletes it if nobody has yet, so its own
// termination drains it. The Node is read by status.nodeName; a launched
// NodeClaim without one may still have a Node (registration removes
// karpenter.sh/unregistered before it records the name, and a deletion in
// between leaves the name unrecorded), so its Node is looked for by
// provider ID among all Nodes, from the API server's watch cache.
func (c *Controller) liveNodesLeft(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	if nc.Status.ProviderID == "" {
		return false, nil
	}
	node, err := c.liveNode(ctx, nc)
	if err != nil || node == nil {
		return false, err
	}
	if node.DeletionTimestamp == nil {
		if err := c.opts.Client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
		c.opts.Recorder.Publish(events.Normal(nc, events.NodeDeleted, "Delete", "Deleting node %s: its NodeClaim is being deleted", node.Name))
	}
	return true, nil
}

// liveNode returns nc's Node as the API server has it, or nil.
func (c *Controller) liveNode(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := c.opts.APIReader.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node); err != nil {
			return nil, client.IgnoreNotFound(fmt.Errorf("reading node %s of nodeclaim %s: %w", nc.Status.NodeName, nc.Name, err))
		}
		if node.Spec.ProviderID != nc.Status.ProviderID {
			return nil, nil
		}
		return node, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.opts.APIReader.List(ctx, nodes, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return nil, fmt.Errorf("looking for the node of nodeclaim %s: %w", nc.Name, err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == nc.Status.ProviderID {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}

// InstanceTerminationRecorded reports whether an earlier pass of either
// termination controller asked the cloud to terminate nc's instance and
// recorded it (InstanceTerminating): from then on the passes only wait
// for the instance, and the API server is no longer asked whether a Node
// or a pod is left.
func InstanceTerminationRecorded(nc *v1.NodeClaim) bool {
	return nc.StatusConditions().IsTrue(v1.ConditionTypeInstanceTerminating)
}

// TerminateInstance is the one way joiner terminates an instance, for both
// termination controllers: it asks the cloud to delete nc's instance and
// reports whether it is gone (the cloud no longer finds it). Callers repeat
// it until it is. The provider only acts on instances this cluster provably
// owns: a foreign instance is left running and reported (an event on
// subject and a log line) rather than silently read as gone. A failure is
// published as a FailedTermination event on subject (the NodeClaim or the
// Node being terminated) and returned; recording InstanceTerminating is the
// caller's, on the objects it writes.
func TerminateInstance(ctx context.Context, cloud cloudprovider.CloudProvider, recorder events.Recorder, nc *v1.NodeClaim, subject client.Object) (bool, error) {
	if nc.Status.ProviderID == "" {
		return true, nil
	}
	err := cloud.Delete(ctx, nc)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, nil
	}
	if cloudprovider.IsNodeClaimNotOwned(err) {
		// The instance runs but is not provably ours, so it is never
		// terminated; termination finishes, loudly, so the user knows the
		// instance outlives its NodeClaim and must be deleted by hand.
		log.FromContext(ctx).Info("left instance running: it is not this cluster's", logging.NodeClaim, klog.KObj(nc), logging.ProviderID, nc.Status.ProviderID, logging.Error, err.Error())
		recorder.Publish(events.Warning(subject, events.FailedTermination, "Terminate",
			"Did not terminate instance %s: it exists but is not this cluster's (%v); it keeps running, delete it by hand", nc.Status.ProviderID, err))
		return true, nil
	}
	if err != nil {
		recorder.Publish(events.Warning(subject, events.FailedTermination, "Terminate", "Terminating instance %s failed: %v", nc.Status.ProviderID, err))
		return false, fmt.Errorf("terminating instance %s: %w", nc.Status.ProviderID, err)
	}
	return false, nil
}

// recordInstanceTerminating sets InstanceTerminating on nc once; a conflict
// is a quiet retry on the next pass.
func (c *Controller) recordInstanceTerminating(ctx context.Context, nc *v1.NodeClaim) error {
	_, err := optimistic.Patch(ctx, c.opts.APIReader, nc, func(nc *v1.NodeClaim) bool {
		return nc.DeletionTimestamp != nil && nc.StatusConditions().WithClock(c.opts.Clock).SetTrue(v1.ConditionTypeInstanceTerminating)
	}, func(nc *v1.NodeClaim, p client.Patch) error {
		return c.opts.Client.Status().Patch(ctx, nc, p)
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("recording instance termination: %w", err)
	}
	return nil
}
