package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// DaemonPodsFor returns the DaemonSet pods (one per DaemonSet, as in
// Snapshot.DaemonSets) that will run on a node with these labels and
// taints: they tolerate its taints (by the rule the solver's
// daemonOverhead applies to a NodePool's new nodes) and their node selector
// and required node affinity match its labels. The live model counts them
// on an in-flight NodeClaim, which has no DaemonSet pods yet but will as
// soon as its Node joins, so pods planned onto the NodeClaim still fit.
func DaemonPodsFor(daemons []*corev1.Pod, labels map[string]string, taints []corev1.Taint) []*corev1.Pod {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	var out []*corev1.Pod
	for _, d := range daemons {
		if _, bad := untolerated(taints, d.Spec.Tolerations, true); bad {
			continue
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(d).Match(node); err != nil || !ok {
			continue
		}
		out = append(out, d)
	}
	return out
}
