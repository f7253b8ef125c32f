package provisioning

import (
	"github.com/joiner-dev/joiner/pkg/scheduling"
	corev1 "k8s.io/api/core/v1"
)

// IsProvisionable reports whether pod is one the provisioner should find
// capacity for: the scheduler said it fits nowhere (PodScheduled=False,
// reason Unschedulable), it is not bound, not preempting its way onto a
// node, not being deleted, not finished, not a mirror pod and not owned by
// a DaemonSet (the DaemonSet controller places those, on every node).
func IsProvisionable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" {
		return false
	}
	if pod.DeletionTimestamp != nil {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if scheduling.IsOwnedByDaemonSet(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
