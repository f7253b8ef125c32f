package podevents

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/state"
)

// DedupeWindow is how long after one recorded pod event the next is not
// written (Karpenter's value).
const DedupeWindow = 10 * time.Second

// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch;update

// Options are the controller's dependencies.
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// CloudProvider names the node class kinds joiner serves; NodeClaims of
	// other kinds are left alone.
	CloudProvider cloudprovider.CloudProvider
	// Clock stamps the events (default: the real clock).
	Clock clock.PassiveClock
}

// Controller is nodeclaim.podevents.
type Controller struct {
	opts        Options
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and builds the controller.
func NewController(opts Options) (*Controller, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("nodeclaim podevents: Client is required")
	case opts.CloudProvider == nil:
		return nil, errors.New("nodeclaim podevents: CloudProvider is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("nodeclaim podevents: %w", err)
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds the controller to mgr. It wakes on the pod transitions
// that change what a node carries: bound, terminal, terminating. It lists
// by the field indexes of state.RegisterFieldIndexes, which must be
// registered on mgr first.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("nodeclaim.podevents").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return false },
			DeleteFunc:  func(e event.DeleteEvent) bool { return false },
			GenericFunc: func(e event.GenericEvent) bool { return false },
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, ok1 := e.ObjectOld.(*corev1.Pod)
				cur, ok2 := e.ObjectNew.(*corev1.Pod)
				return ok1 && ok2 && Changed(old, cur)
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// Changed reports whether the update from old to cur is a pod event that
// counts for its node: the pod was bound, went terminal or began
// terminating, and it is a workload pod.
func Changed(old, cur *corev1.Pod) bool {
	if cur.Spec.NodeName == "" || !pods.IsWorkload(cur) {
		return false
	}
	bound := old.Spec.NodeName == ""
	terminal := !pods.IsTerminal(old) && pods.IsTerminal(cur)
	terminating := old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil
	return bound || terminal || terminating
}

// Reconcile stamps the pod's node's NodeClaim with the current time
// (Record says when it does not), and looks at the pod again when whether
// the event counts is not known yet.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName == "" || !pods.IsWorkload(pod) {
		return reconcile.Result{}, nil
	}
	again, err := c.Record(ctx, pod.Spec.NodeName, boundAt(pod))
	return reconcile.Result{RequeueAfter: again}, err
}

// boundAt is when pod was bound (its PodScheduled condition turned True,
// which the API server stamps at the binding), or zero when the event is
// not a binding (the pod is terminal or terminating) or the time is not
// known (a pod created with its node name has no such condition).
func boundAt(pod *corev1.Pod) time.Time {
	if !pods.IsActive(pod) {
		return time.Time{}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// Retries of a pod event on a NodeClaim the cache shows uninitialised:
// soon while the binding is recent, since the cache may only lag (and the
// consolidation controller, reading the same cache, could otherwise see
// the initialisation a whole retry before the binding's write), then
// every DedupeWindow while the node does not initialise.
const (
	recentBindingRetry = time.Second
	uninitializedRetry = DedupeWindow
	recentBinding      = time.Minute
)

// Record stamps lastPodEventTime on the NodeClaim of the named node, for a
// pod event that counts: one after the NodeClaim was initialised.
// Consolidation counts a node's quiet time from the later of its
// initialisation and its last pod event, so a pod bound while the node
// initialises changes nothing, and is not written: in a 500-node burst 277
// of the 500 first-pod writes came before the lifecycle controller's
// initialisation patch and cost it 151 conflicts (docs/performance/log-2026-11-24-to-29.md).
//
// boundAt is when the pod was bound, for a binding (zero otherwise or when
// unknown). While the NodeClaim is not initialised (in this process's
// cache, which may lag) whether the event counts is not known yet: Record
// returns how long to wait before asking again, and then compares boundAt
// with the initialisation time the NodeClaim carries.
func (c *Controller) Record(ctx context.Context, nodeName string, boundAt time.Time) (time.Duration, error) {
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if node.Spec.ProviderID == "" {
		return 0, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return 0, fmt.Errorf("listing nodeclaims of node %s: %w", nodeName, err)
	}
	now := c.opts.Clock.Now()
	var again time.Duration
	for i := range list.Items {
		nc := &list.Items[i]
		if !c.nodeClasses.Manages(nc.Spec.NodeClassRef) || nc.DeletionTimestamp != nil {
			continue
		}
		initialized := nc.StatusConditions().Get(v1.ConditionTypeInitialized)
		if initialized == nil || initialized.Status != metav1.ConditionTrue {
			again = uninitializedRetry
			if !boundAt.IsZero() && now.Sub(boundAt) < recentBinding {
				again = recentBindingRetry
			}
			continue
		}
		// Both times are in whole seconds: a binding in the second of
		// the initialisation counts, which can only lengthen the wait.
		// (The initialisation is stamped by joiner's clock, the binding by
		// the API server's: skew between them moves the line by as much.)
		if !boundAt.IsZero() && boundAt.Before(initialized.LastTransitionTime.Time) {
			continue
		}
		if last := nc.Status.LastPodEventTime.Time; !last.IsZero() && now.Sub(last) < DedupeWindow {
			continue
		}
		stored := nc.DeepCopy()
		nc.Status.LastPodEventTime = metav1.NewTime(now)
		if err := c.opts.Client.Status().Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return 0, fmt.Errorf("recording last pod event on nodeclaim %s: %w", nc.Name, err)
		}
	}
	return again, nil
}
