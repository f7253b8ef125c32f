package lifecycle

import (
	"context"
	"fmt"
	nodeutil "k8s.io/component-helpers/node/util"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Initialized condition reasons.
const (
	ReasonNodeNotReady              = "NodeNotReady"
	ReasonStartupTaintsExist        = "StartupTaintsExist"
	ReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist"
	ReasonResourceNotRegistered     = "ResourceNotRegistered"
	ReasonArchitectureMismatch      = "ArchitectureMismatch"
	ReasonLegacyUninitializedTaint  = "LegacyUninitializedTaint"
)

// initialize marks the NodeClaim Initialized once its Node can run pods:
// Ready, startup and ephemeral taints gone, requested or promised extended
// resources allocatable. A Node whose architecture contradicts the NodeClaim is
// reported as False: waiting will not fix it. registered is the Node as
// registration just patched it in this reconcile, or nil (read the cache).
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim, registered *corev1.Node) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if !conds.IsTrue(v1.ConditionTypeRegistered) || conds.IsTrue(v1.ConditionTypeInitialized) {
		return stepResult{}, nil
	}
	if registered != nil && registered.Name == nc.Status.NodeName {
		return c.initializeNode(ctx, nc, registered)
	}
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			conds.SetUnknownWithReason(v1.ConditionTypeInitialized, ReasonNodeNotFound, fmt.Sprintf("Node %s not found", nc.Status.NodeName))
			return stepResult{}, nil
		}
		return stepResult{}, fmt.Errorf("getting node %s for nodeclaim %s: %w", nc.Status.NodeName, nc.Name, err)
	}
	return c.initializeNode(ctx, nc, node)
}

// initializeNode is initialize's judgement of node.
func (c *Controller) initializeNode(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if msg := architectureMismatch(nc, node); msg != "" {
		conds.SetFalse(v1.ConditionTypeInitialized, ReasonArchitectureMismatch, msg)
		c.opts.Recorder.Publish(events.Warning(nc, events.ArchitectureMismatch, "Initialize", "%s", msg),
			events.Warning(node, events.ArchitectureMismatch, "Initialize", "%s", msg))
		return stepResult{}, nil
	}
	if reason, msg := notInitialized(nc, node); reason != "" {
		prev := conds.Get(v1.ConditionTypeInitialized)
		entered := prev == nil || prev.Reason != reason
		conds.SetUnknownWithReason(v1.ConditionTypeInitialized, reason, msg)
		switch {
		case reason == ReasonLegacyUninitializedTaint:
			c.opts.Recorder.Publish(events.Warning(nc, events.LegacyUninitializedTaint, "Initialize", "%s", msg))
		case reason == ReasonResourceNotRegistered && entered:
			// Said once, when the node is otherwise ready: the resource is
			// what the pods wait for, and a device plugin that is not
			// running will not start by waiting (the initialisation
			// timeout deletes the node later, naming the same cause).
			c.opts.Recorder.Publish(events.Warning(nc, events.ExtendedResourceMissing, "Initialize", "%s", msg),
				events.Warning(node, events.ExtendedResourceMissing, "Initialize", "%s", msg))
		}
		return stepResult{}, nil
	}

	if node.Labels[v1.LabelNodeInitialized] != "true" {
		stored := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.LabelNodeInitialized] = "true"
		// One label key set: a merge patch cannot undo anyone's change,
		// so it needs no lock (the kubelet's status writes would make a
		// locked one conflict).
		if err := c.opts.Client.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return stepResult{}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	conds.SetTrue(v1.ConditionTypeInitialized)
	log.FromContext(ctx).Info("initialized nodeclaim", logging.Node, klog.KObj(node))
	return stepResult{}, nil
}

// notInitialized returns the first reason the node is not initialized yet,
// with a message saying what is awaited, or "".
func notInitialized(nc *v1.NodeClaim, node *corev1.Node) (reason, message string) {
	if ready := nodeReady(node); ready == nil || ready.Status != corev1.ConditionTrue {
		msg := fmt.Sprintf("Node %s is not Ready", node.Name)
		if ready != nil && ready.Message != "" {
			msg += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
		}
		return ReasonNodeNotReady, msg
	}
	var startup []string
	for _, t := range nc.Spec.StartupTaints {
		if hasTaintKeyEffect(node.Spec.Taints, t) {
			startup = append(startup, taintString(t))
		}
	}
	if len(startup) > 0 {
		return ReasonStartupTaintsExist, fmt.Sprintf("waiting for startup taint(s) %s to be removed from Node %s by the agent that owns them", strings.Join(startup, ", "), node.Name)
	}
	if hasTaintKey(node.Spec.Taints, v1.TaintKeyUninitializedLegacy) {
		return ReasonLegacyUninitializedTaint, fmt.Sprintf("Node %s carries the legacy taint %s, which nothing removes: joiner uses %s:NoExecute. Fix --register-with-taints in the node bootstrap, or list %s in the NodePool's startupTaints and remove it yourself.",
			node.Name, v1.TaintKeyUninitializedLegacy, v1.TaintKeyUnregistered, v1.TaintKeyUninitializedLegacy)
	}
	var ephemeral []string
	for _, t := range node.Spec.Taints {
		if v1.IsEphemeralTaint(t) {
			ephemeral = append(ephemeral, taintString(t))
		}
	}
	if len(ephemeral) > 0 {
		return ReasonKnownEphemeralTaintsExist, fmt.Sprintf("waiting for taint(s) %s to be removed from Node %s", strings.Join(ephemeral, ", "), node.Name)
	}
	if missing := missingExtendedResources(nc, node); len(missing) > 0 {
		return ReasonResourceNotRegistered, fmt.Sprintf("waiting for %s to be registered in Node %s's allocatable (is its device plugin running on the node?)", strings.Join(missing, ", "), node.Name)
	}
	return "", ""
}

// missingExtendedResources lists the extended resources (nvidia.com/gpu,
// ...) the NodeClaim requests or its instance type promises (status
// capacity) that the Node does not advertise yet, sorted.
func missingExtendedResources(nc *v1.NodeClaim, node *corev1.Node) []string {
	want := map[corev1.ResourceName]bool{}
	for _, rl := range []corev1.ResourceList{nc.Spec.Resources.Requests, nc.Status.Capacity} {
		for name, q := range rl {
			if isExtendedResource(name) && !q.IsZero() {
				want[name] = true
			}
		}
	}
	var missing []string
	for name := range want {
		if have, ok := node.Status.Allocatable[name]; !ok || have.IsZero() {
			missing = append(missing, string(name))
		}
	}
	sort.Strings(missing)
	return missing
}

// architectureMismatch explains a Node whose kubernetes.io/arch the
// NodeClaim does not allow, or returns "".
func architectureMismatch(nc *v1.NodeClaim, node *corev1.Node) string {
	got := node.Labels[v1.LabelArch]
	if got == "" {
		return ""
	}
	var want []string
	if a := nc.Labels[v1.LabelArch]; a != "" {
		want = []string{a}
	} else {
		for _, r := range nc.Spec.Requirements {
			if r.Key == v1.LabelArch && r.Operator == corev1.NodeSelectorOpIn {
				want = r.Values
			}
		}
	}
	if len(want) == 0 || slices.Contains(want, got) {
		return ""
	}
	return fmt.Sprintf("node %s registered as %s but the NodeClaim requires %s: check the AMI/image architecture of node class %s/%s (an %s image on an %s instance type, or the other way round); pods that need %s will not run on it.",
		node.Name, got, strings.Join(want, " or "), nc.Spec.NodeClassRef.Kind, nc.Spec.NodeClassRef.Name, got, strings.Join(want, "/"), strings.Join(want, "/"))
}

func nodeReady(node *corev1.Node) *corev1.NodeCondition {
	_, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeReady)
	return c
}

func hasTaintKeyEffect(taints []corev1.Taint, want corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == want.Key && t.Effect == want.Effect {
			return true
		}
	}
	return false
}

// isExtendedResource reports whether name is a vendor resource such as
// nvidia.com/gpu (not cpu, memory, pods, storage or hugepages).
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") {
		return false
	}
	return !strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix) && !strings.HasPrefix(s, "requests.")
}

// Nominations names the pods the provisioner nominated to a NodeClaim
// (state.Nominations implements it).
type Nominations interface {
	PodsNominatedTo(nodeClaimName string) []types.NamespacedName
}

// initializationLiveness deletes a registered NodeClaim that did not
// initialize within InitializationTTL of registering, with an
// Initialized=False condition and events (on the NodeClaim, its Node, its
// NodePool and the pods nominated to it) that name the check that failed.
// The NodePool's launch health records the failure, which backs off the
// next launch of the same instance type and image (recordFailure).
func (c *Controller) initializationLiveness(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if conds.IsTrue(v1.ConditionTypeInitialized) {
		return stepResult{}, nil
	}
	registered := conds.Get(v1.ConditionTypeRegistered)
	left := c.opts.InitializationTTL - c.opts.Clock.Since(registered.LastTransitionTime.Time)
	if left > 0 {
		return stepResult{requeueAfter: left}, nil
	}
	init := conds.Get(v1.ConditionTypeInitialized)
	reason, msg := initializationTimeoutMessage(nc, *init, c.opts.InitializationTTL)

	base := nc.DeepCopy()
	conds.SetFalse(v1.ConditionTypeInitialized, reason, msg)
	if err := c.opts.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return stepResult{}, fmt.Errorf("recording the initialization timeout of nodeclaim %s: %w", nc.Name, err)
	}
	evts := []events.Event{events.Warning(nc, events.InitializationTimeout, "Delete", "%s", msg)}
	if nc.Status.NodeName != "" {
		evts = append(evts, events.Warning(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}, events.InitializationTimeout, "Delete", "%s", msg))
	}
	evts = append(evts, c.nominatedPodEvents(ctx, nc, reason)...)
	pool := nc.Labels[v1.LabelNodePool]
	np := &v1.NodePool{}
	if pool != "" && c.opts.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
		evts = append(evts, events.Warning(np, events.InitializationTimeout, "Delete", "%s", msg))
	}
	c.opts.Recorder.Publish(evts...)
	// Recorded before the deletion, as for registration (liveness).
	c.recordFailure(ctx, nc, launchhealth.PhaseInitialization, reason, msg, c.opts.InitializationTTL)
	log.FromContext(ctx).Info("deleting nodeclaim: initialization timeout", logging.Reason, reason, logging.Node, klog.KRef("", nc.Status.NodeName))
	if err := c.deleteNodeClaim(ctx, nc); err != nil {
		return stepResult{}, err
	}
	metrics.NodeClaimsLivenessExpired.WithLabelValues(pool, "initialization").Inc()
	metrics.NodeClaimsInitializationFailed.WithLabelValues(pool, reason).Inc()
	return stepResult{deleted: true}, nil
}

// initializationTimeoutMessage names the check that kept nc from being
// initialized, from its Initialized condition, and what to look at.
func initializationTimeoutMessage(nc *v1.NodeClaim, init metav1.Condition, ttl time.Duration) (reason, msg string) {
	node := nc.Status.NodeName
	head := fmt.Sprintf("NodeClaim %s (%s, %s, image %s) registered Node %s but it was not initialized within %s",
		nc.Name, orUnknown(nc.Labels[v1.LabelInstanceType]), orUnknown(nc.Labels[v1.LabelTopologyZone]), orUnknown(nc.Status.ImageID), node, ttl)
	tail := "; joiner is deleting it so its pods can get another node."
	reason = init.Reason
	switch init.Reason {
	case ReasonNodeNotReady:
		msg = fmt.Sprintf("%s: the Node never became Ready (%s)%s Check the kubelet on the instance (journalctl -u kubelet), its container runtime and CNI plugin (for example the aws-node or cilium pods on the node), and that its security groups let it reach the API server.",
			head, init.Message, tail)
	case ReasonStartupTaintsExist, ReasonLegacyUninitializedTaint, ReasonKnownEphemeralTaintsExist:
		reason = ReasonStartupTaintsExist
		msg = fmt.Sprintf("%s: taints that keep pods off were never removed (%s)%s", head, init.Message, tail)
		if missing := nc.Annotations[v1.AnnotationStartupTaintsMissing]; missing != "" {
			msg += fmt.Sprintf(" The Node registered without the startup taint(s) %s, so joiner added them afterwards: the agent that removes them had likely already started and will not remove them again. Fix the node bootstrap's --register-with-taints (the node class userData).", missing)
		}
		if init.Reason == ReasonLegacyUninitializedTaint {
			msg += fmt.Sprintf(" The Node carries the legacy taint %s, which nothing removes: change the bootstrap's --register-with-taints to %s:NoExecute.", v1.TaintKeyUninitializedLegacy, v1.TaintKeyUnregistered)
		} else {
			msg += " The DaemonSet that owns each taint (a CNI, CSI or GPU agent) must run on the node, tolerate the taint and remove it when ready: check it is scheduled there (kubectl get pods -A -o wide --field-selector spec.nodeName=" + node + ")."
		}
	case ReasonResourceNotRegistered:
		msg = fmt.Sprintf("%s: expected resources never appeared (%s)%s Extended resources such as nvidia.com/gpu are advertised by a device plugin DaemonSet (for example the NVIDIA device plugin): check that it runs on the node and that the image has the driver.",
			head, init.Message, tail)
	case ReasonArchitectureMismatch:
		msg = fmt.Sprintf("%s: %s%s", head, init.Message, tail)
	default:
		msg = fmt.Sprintf("%s (%s: %s)%s", head, init.Reason, init.Message, tail)
	}
	return reason, msg
}

// nominatedPodEvents tells each pod nominated to nc, still pending, that
// the node it waited for was given up.
func (c *Controller) nominatedPodEvents(ctx context.Context, nc *v1.NodeClaim, reason string) []events.Event {
	var out []events.Event
	for _, pod := range c.pendingNominatedPods(ctx, nc) {
		out = append(out, events.Warning(pod, events.InitializationTimeout, "Provision",
			"Pod was nominated to nodeclaim/%s, which did not initialize in time (%s) and is being deleted; joiner will provision capacity for the pod again (kubectl describe nodeclaim %s).",
			nc.Name, reason, nc.Name))
	}
	return out
}

// pendingNominatedPods are the pods nominated to nc that are still pending.
func (c *Controller) pendingNominatedPods(ctx context.Context, nc *v1.NodeClaim) []*corev1.Pod {
	if c.opts.Nominations == nil {
		return nil
	}
	var out []*corev1.Pod
	for _, key := range c.opts.Nominations.PodsNominatedTo(nc.Name) {
		pod := &corev1.Pod{}
		if err := c.opts.Client.Get(ctx, key, pod); err != nil || pod.Spec.NodeName != "" {
			continue
		}
		out = append(out, pod)
	}
	return out
}
