package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
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
// reported as False: waiting will not fix it.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if !conds.IsTrue(v1.ConditionTypeRegistered) || conds.IsTrue(v1.ConditionTypeInitialized) {
		return stepResult{}, nil
	}
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			conds.SetUnknownWithReason(v1.ConditionTypeInitialized, ReasonNodeNotFound, fmt.Sprintf("Node %s not found", nc.Status.NodeName))
			return stepResult{}, nil
		}
		return stepResult{}, fmt.Errorf("getting node %s for nodeclaim %s: %w", nc.Status.NodeName, nc.Name, err)
	}

	if msg := architectureMismatch(nc, node); msg != "" {
		conds.SetFalse(v1.ConditionTypeInitialized, ReasonArchitectureMismatch, msg)
		c.opts.Recorder.Publish(events.Warning(nc, events.ArchitectureMismatch, "Initialize", "%s", msg),
			events.Warning(node, events.ArchitectureMismatch, "Initialize", "%s", msg))
		return stepResult{}, nil
	}
	if reason, msg := notInitialized(nc, node); reason != "" {
		conds.SetUnknownWithReason(v1.ConditionTypeInitialized, reason, msg)
		if reason == ReasonLegacyUninitializedTaint {
			c.opts.Recorder.Publish(events.Warning(nc, events.LegacyUninitializedTaint, "Initialize", "%s", msg))
		}
		return stepResult{}, nil
	}

	if node.Labels[v1.LabelNodeInitialized] != "true" {
		stored := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.LabelNodeInitialized] = "true"
		if err := c.opts.Client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return stepResult{}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	conds.SetTrue(v1.ConditionTypeInitialized)
	log.FromContext(ctx).Info("initialized nodeclaim", "node", node.Name)
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
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
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
