package capacitybuffer

import (
	"maps"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
)

// ChunkPod is one chunk of cb as a pod of template's shape, before it is
// numbered: the template's labels (so spread and affinity count it as the
// workload's), its spec without a node, and the buffer's annotations in
// place of the template's (a do-not-disrupt or other annotation of the
// workload means nothing for room that no process uses).
func ChunkPod(cb *autoscalingv1beta1.CapacityBuffer, template *corev1.PodTemplateSpec) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cb.Namespace,
			Labels:    maps.Clone(template.Labels),
			Annotations: map[string]string{
				autoscalingv1beta1.AnnotationVirtualPod:      "true",
				autoscalingv1beta1.AnnotationBufferName:      cb.Name,
				autoscalingv1beta1.AnnotationBufferNamespace: cb.Namespace,
			},
		},
		Spec: *template.Spec.DeepCopy(),
		Status: corev1.PodStatus{
			Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			}},
		},
	}
	p.Spec.NodeName = ""
	p.Spec.Priority = ptr.To(int32(math.MinInt32))
	p.Spec.PriorityClassName = ""
	return p
}

// VirtualPods are n numbered copies of chunk (ChunkPod). Names and UIDs are
// fixed by the buffer's UID and the index, so a NodeClaim launched for them
// gets the same deterministic name when a pass is retried.
func VirtualPods(cb *autoscalingv1beta1.CapacityBuffer, chunk *corev1.Pod, n int32) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		p := chunk.DeepCopy()
		p.Name = cb.Name + "-buffer-" + strconv.Itoa(int(i))
		p.UID = types.UID(string(cb.UID) + "-" + strconv.Itoa(int(i)))
		out = append(out, p)
	}
	return out
}

// BufferOf names the buffer a virtual pod belongs to (ok false for any
// other pod).
func BufferOf(p *corev1.Pod) (types.NamespacedName, bool) {
	name := p.Annotations[autoscalingv1beta1.AnnotationBufferName]
	if p.Annotations[autoscalingv1beta1.AnnotationVirtualPod] != "true" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: p.Annotations[autoscalingv1beta1.AnnotationBufferNamespace], Name: name}, true
}
