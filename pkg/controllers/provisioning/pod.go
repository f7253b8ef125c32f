package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
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

// avoidsManagedNodes reports whether pod requires nodes without the
// karpenter.sh/nodepool label, in every term of its required node
// affinity (as joiner's own pods do): no NodePool can ever take it, so the
// provisioner leaves it alone instead of reporting it unschedulable.
func avoidsManagedNodes(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms {
		avoids := false
		for _, r := range term.MatchExpressions {
			if r.Key == v1.LabelNodePool && r.Operator == corev1.NodeSelectorOpDoesNotExist {
				avoids = true
			}
		}
		if !avoids {
			return false
		}
	}
	return true
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
