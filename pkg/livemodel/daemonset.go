package livemodel

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// daemonPodsFor returns the DaemonSet pods that will run on a node with
// these labels and taints. An in-flight NodeClaim has no DaemonSet pods
// yet, but they will take their room as soon as its Node joins, so the
// snapshot counts them there and pods planned onto the NodeClaim still fit.
func daemonPodsFor(daemons []*corev1.Pod, labels map[string]string, taints []corev1.Taint) []*corev1.Pod {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	var out []*corev1.Pod
	for _, d := range daemons {
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, d.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if untolerated {
			continue
		}
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(d).Match(node); err != nil || !ok {
			continue
		}
		out = append(out, d)
	}
	return out
}
