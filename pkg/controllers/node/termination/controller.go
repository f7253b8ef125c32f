package termination

import (
	"context"
	"errors"
	"fmt"
	nodeutil "k8s.io/component-helpers/node/util"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	nodeclaimtermination "github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/termination"
	"github.com/joiner-dev/joiner/pkg/controllers/optimistic"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Requeue intervals while waiting on the cluster. Draining is driven by
// polling because evictions blocked by a PodDisruptionBudget produce no
// event on the node to wake us.
const (
	drainPollInterval    = time.Second
	instancePollInterval = 2 * time.Second
	// minDrainWindow is the least time between a Node's deletion and its
	// being declared drained: a pod bound just before the disrupted taint
	// landed may not be in the cache yet, and must not be missed.
	minDrainWindow = 5 * time.Second
	// maxConcurrentReconciles lets a large scale-down drain its nodes side
	// by side rather than one at a time.
	maxConcurrentReconciles = 50
)

// labelExcludeFromLB takes a terminating node out of cloud load balancers
// before its pods go, so in-flight connections drain with them.
const labelExcludeFromLB = "node.kubernetes.io/exclude-from-external-load-balancers"

// Options are the controller's dependencies.
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	// A pass reads pods, NodeClaims, claims and volume attachments from
	// it (a drain polls every second); only the drain's last word, that
	// no pod is left, comes from the API server (APIReader).
	Client client.Client
	// APIReader reads from the API server itself (the manager's
	// GetAPIReader; required).
	APIReader client.Reader
	// CloudProvider terminates the node's instance.
	CloudProvider cloudprovider.CloudProvider
	// Recorder publishes events; Clock is injected for tests.
	Recorder events.Recorder
	Clock    clock.Clock
}

// Controller drains and removes terminating managed Nodes.
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
		return nil, errors.New("node termination: Client is required")
	case opts.APIReader == nil:
		return nil, errors.New("node termination: APIReader is required")
	case opts.CloudProvider == nil:
		return nil, errors.New("node termination: CloudProvider is required")
	case opts.Recorder == nil:
		return nil, errors.New("node termination: Recorder is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("node termination: %w", err)
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds the controller to mgr. Only Nodes carrying joiner's
// termination finalizer are watched. It lists by the field indexes of
// state.RegisterFieldIndexes, which must be registered on mgr first.
func (c *Controller) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("node.termination").
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer)
		}))).
		Complete(c)
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=update;patch

// Reconcile runs the termination phases in order; each phase either
// finishes or asks to be called again.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "node.termination")
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}

	nodeClaims, err := c.nodeClaimsFor(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !c.manages(node, nodeClaims) {
		// Another controller (Karpenter itself, during a migration) owns
		// this finalizer; its promise that the instance is terminated
		// first is not ours to break.
		return reconcile.Result{}, nil
	}
	// A Node and its NodeClaim go together: deleting either deletes both.
	// The cache's copy of a NodeClaim this pass deleted is a version
	// behind, so it is read again from the API server for the conditions
	// this pass records on it.
	for _, nc := range nodeClaims {
		if nc.DeletionTimestamp == nil {
			if err := c.opts.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of terminating node: %w", nc.Name, err)
			}
			key := client.ObjectKeyFromObject(nc)
			fresh := &v1.NodeClaim{}
			if err := c.opts.APIReader.Get(ctx, key, fresh); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("reading deleted nodeclaim %s: %w", key.Name, err)
			} else if err == nil {
				*nc = *fresh
			}
		}
	}
	if err := c.taint(ctx, node); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return reconcile.Result{}, nil
		case apierrors.IsConflict(err):
			// Still conflicting after reading it afresh: a quiet retry.
			return reconcile.Result{RequeueAfter: drainPollInterval}, nil
		}
		return reconcile.Result{}, err
	}
	if node.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		// The API server's Node, read afresh, is already released (the
		// cache had not seen this controller's last write) or is a new
		// Node of the same name.
		return reconcile.Result{}, nil
	}
	deadline := terminationDeadline(nodeClaims)

	// A node whose instance is already gone and whose kubelet stopped
	// reporting cannot be drained: no pod deletion would ever be confirmed.
	// Only a node that is not Ready is asked about, so a normal drain makes
	// no cloud call per pass.
	if !nodeReady(node) {
		if gone, err := c.instanceGone(ctx, node); err != nil {
			return reconcile.Result{}, err
		} else if gone {
			return reconcile.Result{}, c.removeFinalizer(ctx, node, "instance already terminated and node not ready; skipped the drain")
		}
	}

	pods, err := podsOn(ctx, c.opts.Client, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	drained, err := c.drain(ctx, node, pods, nodeClaims, deadline)
	if err != nil || !drained {
		return reconcile.Result{RequeueAfter: drainPollInterval}, err
	}
	detached, err := c.volumesDetached(ctx, node, pods, nodeClaims, deadline)
	if err != nil || !detached {
		return reconcile.Result{RequeueAfter: drainPollInterval}, err
	}
	gone, err := nodeclaimtermination.TerminateInstance(ctx, c.opts.CloudProvider, c.opts.Recorder, instanceOf(node, nodeClaims), node)
	if err == nil && !gone {
		err = c.setCondition(ctx, nodeClaims, v1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminating", "")
	}
	if err != nil || !gone {
		return reconcile.Result{RequeueAfter: instancePollInterval}, err
	}
	metrics.NodesDrained.WithLabelValues(node.Labels[v1.LabelNodePool]).Inc()
	return reconcile.Result{}, c.removeFinalizer(ctx, node, "drained and instance terminated")
}

// removeFinalizer lets the API server delete the Node. Only the write
// that removes joiner's finalizer counts the Node as terminated: a pass on
// a copy the cache has not updated since finds, on the API server's copy,
// nothing to remove.
func (c *Controller) removeFinalizer(ctx context.Context, node *corev1.Node, why string) error {
	// The API server may answer the last finalizer's removal with the Node
	// as deleted, its timestamps gone: they are taken before.
	pool, deleted, created := node.Labels[v1.LabelNodePool], node.DeletionTimestamp.Time, node.CreationTimestamp.Time
	wrote, err := optimistic.Patch(ctx, c.opts.APIReader, node, func(n *corev1.Node) bool {
		return controllerutil.RemoveFinalizer(n, v1.TerminationFinalizer)
	}, func(n *corev1.Node, p client.Patch) error {
		return c.opts.Client.Patch(ctx, n, p)
	})
	if err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the termination finalizer: %w", err))
	}
	if !wrote {
		return nil
	}
	metrics.NodesTerminated.WithLabelValues(pool).Inc()
	metrics.NodesTerminationDuration.WithLabelValues(pool).Observe(c.opts.Clock.Since(deleted).Seconds())
	metrics.NodesLifetimeDuration.WithLabelValues(pool).Observe(c.opts.Clock.Since(created).Seconds())
	log.FromContext(ctx).Info("deleted node", logging.Reason, why)
	return nil
}

// manages reports whether joiner owns node's termination: its NodeClaims
// use a node class this cloud provider serves or, with no NodeClaim left,
// its provider ID has this provider's scheme.
func (c *Controller) manages(node *corev1.Node, nodeClaims []*v1.NodeClaim) bool {
	for _, nc := range nodeClaims {
		if c.nodeClasses.Manages(nc.Spec.NodeClassRef) {
			return true
		}
	}
	if len(nodeClaims) > 0 {
		return false
	}
	scheme, _, ok := strings.Cut(node.Spec.ProviderID, "://")
	return ok && scheme == c.opts.CloudProvider.Name()
}

// instanceGone reports whether the cloud says node's instance no longer
// exists.
func (c *Controller) instanceGone(ctx context.Context, node *corev1.Node) (bool, error) {
	if node.Spec.ProviderID == "" {
		return false, nil
	}
	_, err := c.opts.CloudProvider.Get(ctx, node.Spec.ProviderID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return true, nil
	}
	if cloudprovider.IsNodeClaimNotOwned(err) {
		// It exists, only not ours: not gone.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up instance %s: %w", node.Spec.ProviderID, err)
	}
	return false, nil
}

func nodeReady(node *corev1.Node) bool {
	_, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// nodeClaimsFor returns the NodeClaims launched as node's instance.
func (c *Controller) nodeClaimsFor(ctx context.Context, node *corev1.Node) ([]*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, list, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	out := make([]*v1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// terminationDeadline is the earliest terminationGracePeriod deadline among
// the node's NodeClaims, or the zero time when none has one.
func terminationDeadline(nodeClaims []*v1.NodeClaim) time.Time {
	var deadline time.Time
	for _, nc := range nodeClaims {
		t, err := time.Parse(time.RFC3339, nc.Annotations[v1.AnnotationNodeClaimTerminationTimestamp])
		if err != nil {
			continue
		}
		if deadline.IsZero() || t.Before(deadline) {
			deadline = t
		}
	}
	return deadline
}

// taint keeps new pods off the node and takes it out of load balancers.
// A Node read afresh that is no longer terminating is left as it is.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	_, err := optimistic.Patch(ctx, c.opts.APIReader, node, func(n *corev1.Node) bool {
		if n.DeletionTimestamp == nil || !controllerutil.ContainsFinalizer(n, v1.TerminationFinalizer) {
			return false
		}
		changed := false
		if !v1.HasDisruptedTaint(n.Spec.Taints) {
			n.Spec.Taints = append(n.Spec.Taints, v1.DisruptedNoScheduleTaint)
			changed = true
		}
		if n.Labels[labelExcludeFromLB] == "" {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[labelExcludeFromLB] = "karpenter"
			changed = true
		}
		return changed
	}, func(n *corev1.Node, p client.Patch) error {
		return c.opts.Client.Patch(ctx, n, p)
	})
	if err != nil {
		return fmt.Errorf("tainting terminating node: %w", err)
	}
	return nil
}

// drain evicts or deletes the node's pods as planDrain says, and reports
// whether the node is empty of pods that must leave.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, pods []*corev1.Pod, nodeClaims []*v1.NodeClaim, deadline time.Time) (bool, error) {
	now := c.opts.Clock.Now()
	plan := planDrain(pods, now, deadline)
	if plan.Done() {
		if now.Sub(node.DeletionTimestamp.Time) < minDrainWindow {
			return false, nil
		}
		if !instanceTerminationRecorded(nodeClaims) {
			// The cache says the node is empty; the API server decides,
			// on every pass up to the one that first asks the cloud to
			// terminate the instance (waiting for volumes can take many):
			// a pod the cache has not seen would go with the instance,
			// PodDisruptionBudget or not. After a kube-apiserver restart
			// each watch comes back on its own backoff, so joiner's cache
			// can miss a pod bound to the node for longer than
			// minDrainWindow, and kube-scheduler's cache can miss the
			// node's disrupted taint and bind one.
			live, err := c.livePodsOn(ctx, node)
			if err != nil {
				return false, err
			}
			plan = planDrain(live, now, deadline)
		}
		if plan.Done() {
			return true, c.setCondition(ctx, nodeClaims, v1.ConditionTypeDrained, metav1.ConditionTrue, "Drained", "")
		}
	}
	var blocked []string
	for i, p := range plan.Delete {
		if err := c.opts.Client.Delete(ctx, p, client.GracePeriodSeconds(plan.DeleteGrace[i]), client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting pod %s/%s at the termination deadline: %w", p.Namespace, p.Name, err)
		}
		// Karpenter's reason for a pod deleted, not evicted, at the deadline.
		c.opts.Recorder.Publish(events.Warning(p, events.Disrupted, "Delete",
			"Deleted pod with %ds of grace: node %s reached its terminationGracePeriod deadline, which overrides PodDisruptionBudgets and %s", plan.DeleteGrace[i], node.Name, v1.AnnotationDoNotDisrupt))
		c.ownerlessGone(node, nodeClaims, p, "deleted at the terminationGracePeriod deadline")
	}
	for _, p := range plan.Evict {
		evicted, msg, err := c.evict(ctx, p)
		if err != nil {
			return false, err
		}
		if evicted {
			c.ownerlessGone(node, nodeClaims, p, "evicted")
		}
		if msg != "" {
			blocked = append(blocked, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, msg))
		}
	}
	for _, p := range plan.Protected {
		blocked = append(blocked, fmt.Sprintf("%s/%s (annotated %s)", p.Namespace, p.Name, v1.AnnotationDoNotDisrupt))
	}
	// The message changes only when what blocks the drain changes, so the
	// NodeClaim's status is not rewritten on every pass.
	message := "waiting for pods to leave the node"
	if len(blocked) > 0 {
		message = fmt.Sprintf("draining blocked by %s", summarize(blocked, 5))
		hint := "the node waits until the budget allows the eviction"
		if deadline.IsZero() {
			hint += "; set spec.template.spec.terminationGracePeriod on the NodePool to bound how long a drain may take"
		} else {
			hint += fmt.Sprintf(", or until the terminationGracePeriod deadline %s", deadline.UTC().Format(time.RFC3339))
		}
		c.opts.Recorder.Publish(events.Warning(node, events.FailedDraining, "Drain", "%s; %s", message, hint))
	}
	return false, c.setCondition(ctx, nodeClaims, v1.ConditionTypeDrained, metav1.ConditionUnknown, "Draining", message)
}

// ownerlessGone says, on the Node and its NodeClaims, that the drain
// removed p for good when p has no controller owner: nothing recreates it,
// and the pod's own events go with it. The disruption controller warned
// before (OwnerlessPods); this is the after.
func (c *Controller) ownerlessGone(node *corev1.Node, nodeClaims []*v1.NodeClaim, p *corev1.Pod, how string) {
	if !pods.IsOwnerless(p) {
		return
	}
	e := events.Warning(node, events.OwnerlessPodEvicted, "Drain",
		"Pod %s/%s was %s while node %s drained; it has no controller owner, so nothing will recreate it", p.Namespace, p.Name, how, node.Name)
	c.opts.Recorder.Publish(e)
	for _, nc := range nodeClaims {
		e.Regarding = nc
		c.opts.Recorder.Publish(e)
	}
}

// evict asks the API server to evict p and reports whether it did. A
// refusal that waiting can fix (a PodDisruptionBudget with no disruptions
// left) returns its message and no error; the pod is retried on the next
// pass.
func (c *Controller) evict(ctx context.Context, p *corev1.Pod) (bool, string, error) {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	var err error
	if plantedbug.Active(plantedbug.DrainIgnoresPDB) {
		err = c.opts.Client.Delete(ctx, p) // no PodDisruptionBudget is asked
	} else {
		err = c.opts.Client.SubResource("eviction").Create(ctx, p, eviction)
	}
	metrics.NodesEvictionRequests.WithLabelValues(responseCode(err)).Inc()
	switch {
	case err == nil:
		c.opts.Recorder.Publish(events.Normal(p, events.Evicted, "Evict", "Evicted pod: its node is terminating"))
		return true, "", nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a pod of the same name: nothing to do.
		return false, "", nil
	case apierrors.IsTooManyRequests(err):
		return false, "PodDisruptionBudget allows no more disruptions", nil
	case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "more than one PodDisruptionBudget"):
		return false, "more than one PodDisruptionBudget selects the pod, so it cannot be evicted", nil
	default:
		return false, "", fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
}

// volumesDetached waits for the node's volume attachments to go, so volumes
// are not torn away from a still-running instance; past the deadline it
// stops waiting.
func (c *Controller) volumesDetached(ctx context.Context, node *corev1.Node, pods []*corev1.Pod, nodeClaims []*v1.NodeClaim, deadline time.Time) (bool, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := c.opts.Client.List(ctx, list); err != nil {
		return false, fmt.Errorf("listing volume attachments: %w", err)
	}
	staying, err := c.volumesOfStayingPods(ctx, pods)
	if err != nil {
		return false, err
	}
	attached := 0
	for _, va := range list.Items {
		pv := va.Spec.Source.PersistentVolumeName
		if va.Spec.NodeName == node.Name && (pv == nil || !staying.Has(*pv)) {
			attached++
		}
	}
	if attached == 0 {
		return true, c.setCondition(ctx, nodeClaims, v1.ConditionTypeVolumesDetached, metav1.ConditionTrue, "VolumesDetached", "")
	}
	if !deadline.IsZero() && !c.opts.Clock.Now().Before(deadline) {
		return true, c.setCondition(ctx, nodeClaims, v1.ConditionTypeVolumesDetached, metav1.ConditionFalse, "TerminationGracePeriodElapsed",
			fmt.Sprintf("%d volume attachments remained at the terminationGracePeriod deadline", attached))
	}
	return false, c.setCondition(ctx, nodeClaims, v1.ConditionTypeVolumesDetached, metav1.ConditionUnknown, "AwaitingVolumeDetachment",
		fmt.Sprintf("waiting for %d volume attachments to detach", attached))
}

// livePodsOn lists the pods bound to node from the API server.
// ResourceVersion "0" lets the API server answer from its watch cache,
// indexed by node name on every Kubernetes version (a consistent read is a
// range over every pod in etcd before 1.31): that cache follows etcd within
// milliseconds, where joiner's own informer can be seconds behind after a
// watch broke.
func (c *Controller) livePodsOn(ctx context.Context, node *corev1.Node) ([]*corev1.Pod, error) {
	pods, err := podsOn(ctx, c.opts.APIReader, node, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		return nil, fmt.Errorf("confirming node %s is drained: %w", node.Name, err)
	}
	return pods, nil
}

// instanceTerminationRecorded reports whether an earlier pass asked the
// cloud to terminate the node's instance and recorded it on one of the
// node's NodeClaims; a Node without a NodeClaim has no record, and its
// drain is confirmed on every pass.
func instanceTerminationRecorded(nodeClaims []*v1.NodeClaim) bool {
	return slices.ContainsFunc(nodeClaims, nodeclaimtermination.InstanceTerminationRecorded)
}

// podsOn lists the pods bound to node through r: the manager's cache,
// whose field index state.IndexPodNodeName bears the name of the API
// server's own field selector, or the API server itself.
func podsOn(ctx context.Context, r client.Reader, node *corev1.Node, opts ...client.ListOption) ([]*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, append(opts, client.MatchingFields{state.IndexPodNodeName: node.Name})...); err != nil {
		return nil, fmt.Errorf("listing pods on node: %w", err)
	}
	out := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		out[i] = &pods.Items[i]
	}
	return out, nil
}

// volumesOfStayingPods returns the persistent volumes used by pods the
// drain leaves in place (they tolerate the disrupted taint, or are static):
// their attachments only go with the instance, so waiting for them would
// never end. The claims are read from the cache: a claim's volumeName is
// set once, when it binds, long before its pod ran on this node.
func (c *Controller) volumesOfStayingPods(ctx context.Context, onNode []*corev1.Pod) (sets.Set[string], error) {
	out := sets.New[string]()
	for _, p := range onNode {
		if pods.NeedsDrain(p) {
			continue
		}
		for _, vol := range p.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.opts.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: vol.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
				if client.IgnoreNotFound(err) == nil {
					continue
				}
				return nil, fmt.Errorf("reading claim %s/%s of pod %s: %w", p.Namespace, vol.PersistentVolumeClaim.ClaimName, p.Name, err)
			}
			if pvc.Spec.VolumeName != "" {
				out.Insert(pvc.Spec.VolumeName)
			}
		}
	}
	return out, nil
}

// instanceOf is the NodeClaim the cloud terminates node's instance through:
// its NodeClaim, or for a node whose NodeClaim is gone one that names only
// the node's provider ID.
func instanceOf(node *corev1.Node, nodeClaims []*v1.NodeClaim) *v1.NodeClaim {
	target := &v1.NodeClaim{}
	if len(nodeClaims) > 0 {
		target = nodeClaims[0].DeepCopy()
	}
	target.Status.ProviderID = node.Spec.ProviderID
	return target
}

// setCondition records a termination phase on the node's NodeClaims so
// `kubectl get nodeclaim -o yaml` shows where the termination stands.
func (c *Controller) setCondition(ctx context.Context, nodeClaims []*v1.NodeClaim, condType string, st metav1.ConditionStatus, reason, message string) error {
	for _, nc := range nodeClaims {
		// Conditions are a list: a plain merge patch replaces the whole
		// list, so it is written under optimistic locking (optimistic.Patch)
		// lest it drop another controller's condition. A conflict that
		// outlasts the re-reads is a quiet retry: the next pass recomputes
		// the condition.
		_, err := optimistic.Patch(ctx, c.opts.APIReader, nc, func(nc *v1.NodeClaim) bool {
			if nc.DeletionTimestamp == nil {
				// Not terminating (gone, or a new NodeClaim of the name):
				// not this drain's to report on.
				return false
			}
			conds := nc.StatusConditions().WithClock(c.opts.Clock)
			switch st {
			case metav1.ConditionTrue:
				return conds.SetTrueWithReason(condType, reason, message)
			case metav1.ConditionFalse:
				return conds.SetFalse(condType, reason, message)
			default:
				return conds.SetUnknownWithReason(condType, reason, message)
			}
		}, func(nc *v1.NodeClaim, p client.Patch) error {
			return c.opts.Client.Status().Patch(ctx, nc, p)
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("recording %s on nodeclaim %s: %w", condType, nc.Name, err)
		}
	}
	return nil
}

// summarize lists up to n items and counts the rest, so a node with a
// thousand blocked pods still gets a readable message.
func summarize(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// responseCode is an eviction request's HTTP status for
// karpenter_nodes_eviction_requests_total ("unknown" when the error is not
// the API server's).
func responseCode(err error) string {
	if err == nil {
		return "200"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "unknown"
}
