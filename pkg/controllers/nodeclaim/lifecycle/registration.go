package lifecycle

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Registered condition reasons.
const (
	ReasonNodeNotFound       = "NodeNotFound"
	ReasonMultipleNodesFound = "MultipleNodesFound"
	// ReasonNodeSyncFailed: the Node registered but joiner could not patch
	// it (an admission webhook or RBAC rejected the patch).
	ReasonNodeSyncFailed = "NodeSyncFailed"
	// ReasonRegistrationBlocked: the cloud provider named the cause that
	// keeps the Node from registering (a node role aws-auth does not map).
	ReasonRegistrationBlocked = "RegistrationBlocked"
)

// kubeletOwnedLabels are reported by the kubelet (or the cloud) about the
// machine itself. Registration never overwrites them from the NodeClaim: if
// they disagree, the machine is right and the disagreement is reported
// (see initialization's architecture check).
var kubeletOwnedLabels = map[string]bool{
	v1.LabelArch: true, v1.LabelOS: true, v1.LabelHostname: true,
	v1.LabelInstanceType: true, v1.LabelTopologyZone: true, v1.LabelTopologyRegion: true,
}

// register finds the NodeClaim's Node by provider ID and makes it joiner's:
// labels, annotations and taints synced, owner reference, finalizer, the
// registered label, and the unregistered taint removed, in one Node patch.
// It returns the Node as patched when it registered it.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim) (stepResult, *corev1.Node, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if !conds.IsTrue(v1.ConditionTypeLaunched) || conds.IsTrue(v1.ConditionTypeRegistered) {
		return stepResult{}, nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.opts.Client.List(ctx, nodes, client.MatchingFields{state.IndexNodeProviderID: nc.Status.ProviderID}); err != nil {
		return stepResult{}, nil, fmt.Errorf("listing nodes with provider id %s: %w", nc.Status.ProviderID, err)
	}
	switch len(nodes.Items) {
	case 0:
		if why := c.whyNotRegistered(ctx, nc); why != "" {
			c.reportRegistrationBlocked(ctx, nc, why)
			conds.SetUnknownWithReason(v1.ConditionTypeRegistered, ReasonRegistrationBlocked,
				fmt.Sprintf("no Node with providerID %s can register: %s", nc.Status.ProviderID, why))
			return stepResult{}, nil, nil
		}
		conds.SetUnknownWithReason(v1.ConditionTypeRegistered, ReasonNodeNotFound,
			fmt.Sprintf("waiting for a Node with providerID %s to register", nc.Status.ProviderID))
		return stepResult{}, nil, nil
	case 1:
	default:
		names := make([]string, 0, len(nodes.Items))
		for i := range nodes.Items {
			names = append(names, nodes.Items[i].Name)
		}
		msg := fmt.Sprintf("nodes %s all have providerID %s; delete the extra Node objects", strings.Join(names, ", "), nc.Status.ProviderID)
		conds.SetFalse(v1.ConditionTypeRegistered, ReasonMultipleNodesFound, msg)
		c.opts.Recorder.Publish(events.Warning(nc, events.MultipleNodesFound, "Register", "%s", msg))
		return stepResult{}, nil, nil
	}
	node := &nodes.Items[0]
	c.holdRoom(ctx, nc, node)
	if err := c.syncNode(ctx, nc, node); err != nil {
		if !apierrors.IsConflict(err) {
			conds.SetUnknownWithReason(v1.ConditionTypeRegistered, ReasonNodeSyncFailed,
				fmt.Sprintf("Node %s has providerID %s but joiner could not update it: %v", node.Name, nc.Status.ProviderID, err))
		}
		return stepResult{}, nil, err
	}
	nc.Status.NodeName = node.Name
	conds.SetTrue(v1.ConditionTypeRegistered)
	log.FromContext(ctx).Info("registered nodeclaim", logging.Node, klog.KObj(node), logging.ProviderID, nc.Status.ProviderID)
	return stepResult{}, node, nil
}

// RoomHolder names a NodeClaim's Node in status.nominatedNodeName of the
// pods planned for it (nomination.Writer implements it).
type RoomHolder interface {
	HoldRoom(ctx context.Context, nodeClaim, node string) error
}

// holdRoom has the pods planned for nc name node before registration
// removes karpenter.sh/unregistered: the taint's removal wakes
// kube-scheduler, which would otherwise give the room to whichever pod it
// tries first, before the planned pods' nominations reach it. A failure
// only costs that protection, so registration goes on.
func (c *Controller) holdRoom(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) {
	if c.opts.Room == nil || !hasTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered) {
		return
	}
	if err := c.opts.Room.HoldRoom(ctx, nc.Name, node.Name); err != nil {
		log.FromContext(ctx).Error(err, "holding room for planned pods", logging.NodeClaim, klog.KObj(nc), logging.Node, klog.KObj(node))
	}
}

// syncNode applies the NodeClaim to its Node in one optimistic-locked patch,
// and reports bootstrap mistakes the first time it sees the Node. The lock
// keeps a taint another controller changed meanwhile (a merge patch
// replaces the whole list; Node taints have no strategic merge key). A new
// Node's kubelet writes its status several times in its first seconds, and
// each write makes the patch conflict: a third of the registrations of a
// 500-node scale-up did, each then waiting a second for its retry. So a
// conflict is retried at once on the Node read from the API server, up to
// nodeSyncAttempts times. node is left as patched.
func (c *Controller) syncNode(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) error {
	firstSight := node.Labels[v1.LabelNodeRegistered] != "true"
	doNotSyncTaints := node.Labels[v1.LabelDoNotSyncTaints] == "true"
	if firstSight {
		c.reportBootstrapTaints(nc, node, doNotSyncTaints)
	}
	var err error
	for attempt := 1; ; attempt++ {
		stored := node.DeepCopy()
		applyRegistration(nc, node, firstSight, doNotSyncTaints)
		if equality.Semantic.DeepEqual(stored, node) {
			return nil
		}
		err = c.opts.Client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
		if err == nil || !apierrors.IsConflict(err) || c.opts.APIReader == nil || attempt == nodeSyncAttempts {
			break
		}
		fresh := &corev1.Node{}
		if gerr := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(node), fresh); gerr != nil {
			break
		}
		*node = *fresh
		// Judged again on the fresh Node: once it is registered, startup
		// taints its agent removed must not come back.
		firstSight = firstSight && node.Labels[v1.LabelNodeRegistered] != "true"
		doNotSyncTaints = node.Labels[v1.LabelDoNotSyncTaints] == "true"
	}
	if err != nil {
		return fmt.Errorf("syncing node %s for nodeclaim %s: %w", node.Name, nc.Name, err)
	}
	return nil
}

// nodeSyncAttempts bounds syncNode's patches of one reconcile.
const nodeSyncAttempts = 3

// applyRegistration makes node joiner's: the NodeClaim's labels (except the
// kubelet's own), annotations and taints (and, at first sight, its startup
// taints), the registered label, the termination finalizer and the owner
// reference, without the unregistered taint.
func applyRegistration(nc *v1.NodeClaim, node *corev1.Node, firstSight, doNotSyncTaints bool) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		if _, has := node.Labels[k]; has && kubeletOwnedLabels[k] {
			continue
		}
		node.Labels[k] = v
	}
	node.Labels[v1.LabelNodeRegistered] = "true"
	if len(nc.Annotations) > 0 && node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	for k, v := range nc.Annotations {
		node.Annotations[k] = v
	}
	if !doNotSyncTaints {
		node.Spec.Taints = addMissingTaints(node.Spec.Taints, nc.Spec.Taints)
		// Startup taints are added only before joiner first registers the
		// node: afterwards their agent may already have removed them.
		if firstSight {
			node.Spec.Taints = addMissingTaints(node.Spec.Taints, nc.Spec.StartupTaints)
		}
	}
	node.Spec.Taints = removeTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered)
	controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
	ensureOwnerReference(node, nc)
	// A Node already fit for pods once registered (Ready, no startup or
	// ephemeral taint left, its resources advertised) is labelled
	// initialized in the same patch, one Node write fewer.
	if reason, _ := notInitialized(nc, node); reason == "" && architectureMismatch(nc, node) == "" {
		node.Labels[v1.LabelNodeInitialized] = "true"
	}
}

// reportBootstrapTaints publishes a Warning for each way the node's
// bootstrap got its registration taints wrong.
func (c *Controller) reportBootstrapTaints(nc *v1.NodeClaim, node *corev1.Node, doNotSyncTaints bool) {
	if !hasTaintKey(node.Spec.Taints, v1.TaintKeyUnregistered) {
		msg := fmt.Sprintf("Node %s registered without the %s:NoExecute taint, so pods could land on it before joiner synced its labels and taints. "+
			"Make the node bootstrap register the kubelet with it (--register-with-taints=%s:NoExecute; with custom userData on EKS: --kubelet-extra-args '--register-with-taints \"%s:NoExecute\"', without '=' or inner quotes).",
			node.Name, v1.TaintKeyUnregistered, v1.TaintKeyUnregistered, v1.TaintKeyUnregistered)
		c.opts.Recorder.Publish(events.Warning(nc, events.UnregisteredTaintMissing, "Register", "%s", msg),
			events.Warning(node, events.UnregisteredTaintMissing, "Register", "%s", msg))
	}
	if hasTaintKey(node.Spec.Taints, v1.TaintKeyUninitializedLegacy) || v1.HasLegacyUninitializedTaint(nc.Spec.StartupTaints) {
		msg := fmt.Sprintf("Node %s of NodeClaim %s uses the taint %s: %s.", node.Name, nc.Name, v1.TaintKeyUninitializedLegacy, v1.LegacyUninitializedTaintFix)
		c.opts.Recorder.Publish(events.Warning(nc, events.LegacyUninitializedTaint, "Register", "%s", msg),
			events.Warning(node, events.LegacyUninitializedTaint, "Register", "%s", msg))
	}
	var missing []string
	for _, t := range nc.Spec.StartupTaints {
		if !hasTaint(node.Spec.Taints, t) {
			missing = append(missing, taintString(t))
		}
	}
	if len(missing) == 0 {
		return
	}
	// Remembered so that an initialization timeout can say why the taints
	// stayed (see initializationTimeoutMessage).
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.AnnotationStartupTaintsMissing] = strings.Join(missing, ", ")
	var msg string
	if doNotSyncTaints {
		msg = fmt.Sprintf("Node %s registered without the NodePool's startup taint(s) %s, and it is labelled %s=true so joiner does not add them: "+
			"pods may start before the agent that owns the taint is ready. The node bootstrap must register them: check the node class userData / registerWithTaints "+
			"(on EKS custom userData: --kubelet-extra-args '--register-with-taints \"<key>=<value>:<effect>\"', without '=' after the flag or inner quotes).",
			node.Name, strings.Join(missing, ", "), v1.LabelDoNotSyncTaints)
	} else {
		msg = fmt.Sprintf("Node %s registered without the NodePool's startup taint(s) %s; joiner added them now, but the node bootstrap should register them itself "+
			"(check the node class userData / registerWithTaints), otherwise pods can race the agent that removes them.",
			node.Name, strings.Join(missing, ", "))
	}
	c.opts.Recorder.Publish(events.Warning(nc, events.StartupTaintsMissing, "Register", "%s", msg),
		events.Warning(node, events.StartupTaintsMissing, "Register", "%s", msg))
}

func ensureOwnerReference(node *corev1.Node, nc *v1.NodeClaim) {
	for _, o := range node.OwnerReferences {
		if o.UID == nc.UID {
			return
		}
	}
	node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
		APIVersion:         v1.SchemeGroupVersion.String(),
		Kind:               "NodeClaim",
		Name:               nc.Name,
		UID:                nc.UID,
		BlockOwnerDeletion: ptr.To(true),
	})
}

// addMissingTaints appends each of want whose key and effect are not on
// taints yet.
func addMissingTaints(taints, want []corev1.Taint) []corev1.Taint {
	for _, t := range want {
		found := false
		for _, have := range taints {
			if have.Key == t.Key && have.Effect == t.Effect {
				found = true
				break
			}
		}
		if !found {
			taints = append(taints, t)
		}
	}
	return taints
}

func removeTaintKey(taints []corev1.Taint, key string) []corev1.Taint {
	out := taints[:0:0]
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}

func hasTaintKey(taints []corev1.Taint, key string) bool {
	for _, t := range taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// hasTaint matches key, value and effect.
func hasTaint(taints []corev1.Taint, want corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == want.Key && t.Value == want.Value && t.Effect == want.Effect {
			return true
		}
	}
	return false
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

// whyNotRegistered asks the cloud provider for the cause that keeps nc's
// Node from registering, "" when it knows none (or could not ask: the
// generic wait goes on).
func (c *Controller) whyNotRegistered(ctx context.Context, nc *v1.NodeClaim) string {
	why, err := cloudprovider.WhyNotRegistered(ctx, c.opts.CloudProvider, nc)
	if err != nil {
		log.FromContext(ctx).V(1).Info("asking the cloud provider why the node has not registered", logging.Error, err.Error())
		return ""
	}
	return why
}

// reportRegistrationBlocked says the cause on nc, its NodePool and the
// pods waiting for it, as soon as it is known rather than at the
// registration TTL. The recorder drops the repeats of later reconciles.
func (c *Controller) reportRegistrationBlocked(ctx context.Context, nc *v1.NodeClaim, why string) {
	evts := []events.Event{events.Warning(nc, events.RegistrationBlocked, "Register", "NodeClaim %s cannot register: %s.", nc.Name, why)}
	if pool := nc.Labels[v1.LabelNodePool]; pool != "" {
		np := &v1.NodePool{}
		if c.opts.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
			evts = append(evts, events.Warning(np, events.RegistrationBlocked, "Register", "NodePool %s's nodes cannot register: %s.", pool, why))
		}
	}
	for _, pod := range c.pendingNominatedPods(ctx, nc) {
		evts = append(evts, events.Warning(pod, events.RegistrationBlocked, "Provision", "Pod waits for nodeclaim/%s, whose node cannot register: %s.", nc.Name, why))
	}
	c.opts.Recorder.Publish(evts...)
}
