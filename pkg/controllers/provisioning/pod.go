package provisioning

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if IsOwnedByDaemonSet(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// IsOwnedByDaemonSet reports whether a DaemonSet controls pod.
func IsOwnedByDaemonSet(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "DaemonSet"
}

// unsupportedVolume returns the name of the first volume the provisioner
// cannot reason about, or "" when every volume is fine. A PVC that does not
// exist yet is reported by the snapshot, not here: it may still be created.
func unsupportedVolume(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		// Inline cloud disks pin a pod to wherever the disk lives, which the
		// provisioner cannot see.
		if v.AWSElasticBlockStore != nil || v.GCEPersistentDisk != nil || v.AzureDisk != nil || v.Cinder != nil {
			return v.Name
		}
	}
	return ""
}
