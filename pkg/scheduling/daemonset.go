package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsOwnedByDaemonSet reports whether a DaemonSet controls p: its controller
// owner reference (metav1.GetControllerOf) is of kind DaemonSet. The
// DaemonSet controller, not the autoscaler, places such a pod on every
// node, so the solver leaves it out of the pods to place, the cluster state
// counts it as a node's daemon overhead, and a drain evicts it last.
//
// An owner reference without controller: true does not make a daemon pod:
// the DaemonSet controller never places such a pod, so the autoscaler must
// (treating it as a daemon pod would drop it without a node or a reason).
// This is the one definition; every package asks it.
func IsOwnedByDaemonSet(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet"
}
