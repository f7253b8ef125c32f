package pods

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Owner kinds the predicates look for.
const (
	kindDaemonSet   = "DaemonSet"
	kindStatefulSet = "StatefulSet"
	kindNode        = "Node"
)

// ControllerOf is p's controller owner reference (controller: true), or
// nil. It points into p: callers read it and never change it.
func ControllerOf(p *corev1.Pod) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(p)
}

// IsOwnedByDaemonSet reports whether a DaemonSet controls p: its controller
// owner reference (metav1.GetControllerOf) is of kind DaemonSet. The
// DaemonSet controller, not the autoscaler, places such a pod on every
// node, so the solver leaves it out of the pods to place, the cluster state
// counts it as a node's daemon overhead, and a drain evicts it after the
// workloads.
//
// An owner reference without controller: true does not make a daemon pod:
// the DaemonSet controller never places such a pod, so the autoscaler must
// (treating it as a daemon pod would drop it without a node or a reason).
func IsOwnedByDaemonSet(p *corev1.Pod) bool {
	ref := ControllerOf(p)
	return ref != nil && ref.Kind == kindDaemonSet
}

// IsOwnedByStatefulSet reports whether a StatefulSet owns p.
func IsOwnedByStatefulSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == kindStatefulSet {
			return true
		}
	}
	return false
}

// IsMirror reports whether p is a static pod's mirror: the kubelet creates
// it from a file on the node and the API server cannot evict it. The kubelet
// marks such pods with the kubernetes.io/config.mirror annotation and makes
// the Node their controller.
func IsMirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	ref := ControllerOf(p)
	return ref != nil && ref.Kind == kindNode
}

// IsTerminal reports whether p has finished (phase Succeeded or Failed): it
// holds no resources and no node waits for it.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsTerminating reports whether p is being deleted.
func IsTerminating(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil
}

// IsActive reports whether p still runs: not finished and not being deleted.
func IsActive(p *corev1.Pod) bool {
	return !IsTerminal(p) && !IsTerminating(p)
}

// IsReschedulable reports whether p must find another node when its node
// goes, in Karpenter's meaning: an active pod, or a terminating StatefulSet
// pod (its replacement cannot start until it is gone, so room is planned for
// it), that neither a DaemonSet nor the kubelet places. Consolidation moves
// these pods, the disruption queue counts them as evictions, and the
// Balanced policy prices them.
func IsReschedulable(p *corev1.Pod) bool {
	return (IsActive(p) || (IsTerminating(p) && IsOwnedByStatefulSet(p))) && !IsOwnedByDaemonSet(p) && !IsMirror(p)
}

// IsWorkload reports whether p is a workload pod whatever its phase: neither
// a DaemonSet's nor a mirror pod. Events about such pods say a node is in
// use; daemon and static pods run on every node and say nothing.
func IsWorkload(p *corev1.Pod) bool {
	return !IsOwnedByDaemonSet(p) && !IsMirror(p)
}

// IsOwnerless reports whether p is a workload pod with no controller owner
// (a bare pod created by hand or by a tool that does not manage it): once
// evicted nothing recreates it, so a drain deletes it for good. Like
// Karpenter v1, joiner does not let such a pod block a node's disruption;
// the disruption controller warns before and the drain says after. Mirror
// pods are the kubelet's, and DaemonSet pods have a controller: neither is
// ownerless.
func IsOwnerless(p *corev1.Pod) bool {
	return ControllerOf(p) == nil && !IsMirror(p)
}

// ToleratesDisrupted reports whether p tolerates the karpenter.sh/disrupted
// NoSchedule taint: such pods chose to stay until their node goes (most
// node agents do), so the drain leaves them where they are.
func ToleratesDisrupted(p *corev1.Pod) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &v1.DisruptedNoScheduleTaint, false)
}

// NeedsDrain reports whether p must leave its node before the node goes:
// not finished, not a mirror pod (the API cannot evict it) and not
// tolerating the disrupted taint. Terminating and do-not-disrupt pods
// still need draining: the drain waits for them.
func NeedsDrain(p *corev1.Pod) bool {
	return !IsTerminal(p) && !IsMirror(p) && !ToleratesDisrupted(p)
}

// IsProvisionable reports whether p is one the provisioner should find
// capacity for: the scheduler said it fits nowhere (PodScheduled=False,
// reason Unschedulable), it is not bound, not preempting its way onto a
// node, not being deleted, not finished, not a mirror pod and not owned by a
// DaemonSet (the DaemonSet controller places those, on every node).
func IsProvisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || !IsActive(p) || !IsWorkload(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// IsVirtual reports whether p is a CapacityBuffer's virtual pod: a chunk of
// spare capacity that exists only in joiner's plans. It is placed after
// every real pod, takes room that consolidation keeps, and is never
// nominated, evicted or told anything (pkg/capacitybuffer builds them).
func IsVirtual(p *corev1.Pod) bool {
	return p.Annotations[autoscalingv1beta1.AnnotationVirtualPod] == "true"
}
