package state

import (
	"maps"

	nodeutil "k8s.io/component-helpers/node/util"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// StateNode is a copy of one tracked node: a registered Node, an in-flight
// NodeClaim without a Node yet, or both joined by provider ID. Callers own
// it and may mutate it.
type StateNode struct {
	// Node is nil until the NodeClaim's Node registers.
	Node *corev1.Node
	// NodeClaim is nil for nodes joiner does not manage.
	NodeClaim *v1.NodeClaim
	// Pods are the pods bound to the Node that are not terminal (DaemonSet
	// pods included), ordered by namespace/name.
	Pods []*corev1.Pod
	// NominatedPods are pods the provisioner nominated to the NodeClaim
	// whose nomination has not expired and which are not bound yet
	// (Nominations fills them, in the same read as Pods).
	NominatedPods []*corev1.Pod
	// MarkedForDeletion is true when the Node or NodeClaim is being deleted
	// or a consumer marked it.
	MarkedForDeletion bool
	// VolumeLimits is the Node's CSI attach limit per driver, from its
	// CSINode; drivers not listed are unlimited.
	VolumeLimits map[string]int
}

// Name is the Node's name, or the NodeClaim's before the Node registers.
func (n *StateNode) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Name
	}
	return ""
}

// ProviderID is the cloud's ID of the instance ("" before launch).
func (n *StateNode) ProviderID() string {
	if n.Node != nil && n.Node.Spec.ProviderID != "" {
		return n.Node.Spec.ProviderID
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.ProviderID
	}
	return ""
}

// NodePool names the owning NodePool ("" for unmanaged nodes).
func (n *StateNode) NodePool() string {
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[v1.LabelNodePool]
	}
	if n.Node != nil {
		return n.Node.Labels[v1.LabelNodePool]
	}
	return ""
}

// Managed reports whether joiner manages the node (it has a NodeClaim).
func (n *StateNode) Managed() bool { return n.NodeClaim != nil }

// Launched reports whether the instance exists (a Node, or a NodeClaim
// with a provider ID).
func (n *StateNode) Launched() bool { return n.ProviderID() != "" || n.Node != nil }

// Registered reports whether the Node exists.
func (n *StateNode) Registered() bool { return n.Node != nil }

// Initialized reports whether the node is ready for pods: for a managed
// node, its NodeClaim's Initialized condition; for an unmanaged node, the
// Node's Ready condition.
func (n *StateNode) Initialized() bool {
	if n.NodeClaim != nil {
		if meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionTypeInitialized) {
			return true
		}
		return n.Node != nil && n.Node.Labels[v1.LabelNodeInitialized] == "true"
	}
	if n.Node == nil {
		return false
	}
	_, c := nodeutil.GetNodeCondition(&n.Node.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Labels are the Node's labels once it registered (with the NodeClaim's
// labels filling keys the Node lacks); before that, the NodeClaim's labels
// plus every label its requirements pin to a single value, and the
// hostname placeholder (the NodeClaim's name).
func (n *StateNode) Labels() map[string]string {
	out := map[string]string{}
	if n.NodeClaim != nil {
		if n.Node == nil {
			for _, r := range n.NodeClaim.Spec.Requirements {
				if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
					out[r.Key] = r.Values[0]
				}
			}
			out[v1.LabelHostname] = n.NodeClaim.Name
		}
		maps.Copy(out, n.NodeClaim.Labels)
	}
	if n.Node != nil {
		maps.Copy(out, n.Node.Labels)
	}
	return out
}

// Taints are the Node's taints, or the NodeClaim's spec taints before the
// Node registers (startup taints excluded: see StartupTaints).
func (n *StateNode) Taints() []corev1.Taint {
	if n.Node != nil {
		return append([]corev1.Taint(nil), n.Node.Spec.Taints...)
	}
	if n.NodeClaim != nil {
		return append([]corev1.Taint(nil), n.NodeClaim.Spec.Taints...)
	}
	return nil
}

// StartupTaints are the NodeClaim's startup taints.
func (n *StateNode) StartupTaints() []corev1.Taint {
	if n.NodeClaim == nil {
		return nil
	}
	return append([]corev1.Taint(nil), n.NodeClaim.Spec.StartupTaints...)
}

// Capacity is LaunchedCapacity, else (before launch) the NodeClaim's
// requests: what status.resources reports for an in-flight NodeClaim. The
// live model sizes such a claim by its largest instance-type option
// instead, so NodePool limits hold whatever the cloud picks.
func (n *StateNode) Capacity() corev1.ResourceList {
	if c := n.LaunchedCapacity(); c != nil {
		return c
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Spec.Resources.Requests.DeepCopy()
	}
	return corev1.ResourceList{}
}

// LaunchedCapacity is the Node's capacity once reported, else the
// NodeClaim's launched capacity; nil before launch.
func (n *StateNode) LaunchedCapacity() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Capacity) > 0 {
		return n.Node.Status.Capacity.DeepCopy()
	}
	if n.NodeClaim != nil && len(n.NodeClaim.Status.Capacity) > 0 {
		return n.NodeClaim.Status.Capacity.DeepCopy()
	}
	return nil
}

// Allocatable is the Node's allocatable once reported, else the
// NodeClaim's launched estimate; empty before launch (callers size an
// unlaunched NodeClaim from its instance-type options).
func (n *StateNode) Allocatable() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Allocatable) > 0 {
		return n.Node.Status.Allocatable.DeepCopy()
	}
	if n.NodeClaim != nil && len(n.NodeClaim.Status.Allocatable) > 0 {
		return n.NodeClaim.Status.Allocatable.DeepCopy()
	}
	return corev1.ResourceList{}
}

// Nominated reports whether pending pods wait for this node: a live
// nomination to its NodeClaim. Karpenter never disrupts such a node, and
// neither does joiner.
func (n *StateNode) Nominated() bool {
	return len(n.NominatedPods) > 0
}

// PodRequests is the sum of the requests of the bound pods and the
// nominated pods.
func (n *StateNode) PodRequests() corev1.ResourceList {
	return pods.SumRequests(append(append([]*corev1.Pod(nil), n.Pods...), n.NominatedPods...))
}

// DaemonSetRequests is the sum of the requests of the bound DaemonSet pods.
func (n *StateNode) DaemonSetRequests() corev1.ResourceList {
	var ds []*corev1.Pod
	for _, p := range n.Pods {
		if pods.IsOwnedByDaemonSet(p) {
			ds = append(ds, p)
		}
	}
	return pods.SumRequests(ds)
}

// Available is Allocatable minus PodRequests, floored at zero.
func (n *StateNode) Available() corev1.ResourceList {
	out := n.Allocatable()
	for name, q := range n.PodRequests() {
		a, ok := out[name]
		if !ok {
			continue
		}
		a.Sub(q)
		if a.Sign() < 0 {
			a.Set(0)
		}
		out[name] = a
	}
	return out
}

// ExistingNode converts the node to the solver's view. Pods holds the
// bound pods followed by the nominated ones. Allocatable is empty for a
// NodeClaim that has not launched yet: the caller fills it from the
// NodeClaim's instance-type options.
func (n *StateNode) ExistingNode() *scheduling.ExistingNode {
	en := &scheduling.ExistingNode{
		Name:              n.Name(),
		NodePool:          n.NodePool(),
		Labels:            n.Labels(),
		Taints:            n.Taints(),
		StartupTaints:     n.StartupTaints(),
		Initialized:       n.Initialized(),
		Allocatable:       n.Allocatable(),
		Pods:              append(append([]*corev1.Pod(nil), n.Pods...), n.NominatedPods...),
		MarkedForDeletion: n.MarkedForDeletion,
		VolumeLimits:      maps.Clone(n.VolumeLimits),
	}
	if n.NodeClaim != nil {
		en.NodeClaim = n.NodeClaim.Name
	}
	return en
}
