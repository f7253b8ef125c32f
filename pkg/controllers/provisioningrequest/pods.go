package provisioningrequest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
)

// podsFor builds the pods a request stands for: Count pods per pod set,
// each from its PodTemplate's pod template, pending and annotated as
// consumers of the request. Their names and UIDs derive from the request's
// UID, so every plan of the same request names the same pods (and the
// NodeClaims planned for them get the same deterministic names).
func podsFor(pr *autoscalingv1.ProvisioningRequest, templates map[string]*corev1.PodTemplate) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for i, ps := range pr.Spec.PodSets {
		tmpl, ok := templates[ps.PodTemplateRef.Name]
		if !ok {
			return nil, fmt.Errorf("podSets[%d].podTemplateRef: PodTemplate %s/%s not found", i, pr.Namespace, ps.PodTemplateRef.Name)
		}
		for j := range ps.Count {
			name := fmt.Sprintf("%s-%d-%d", pr.Name, i, j)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace:   pr.Namespace,
					Name:        name,
					UID:         podUID(pr.UID, name),
					Labels:      maps.Clone(tmpl.Template.Labels),
					Annotations: maps.Clone(tmpl.Template.Annotations),
				},
				Spec: *tmpl.Template.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest] = pr.Name
			pod.Annotations[autoscalingv1.AnnotationProvisioningClassName] = pr.Spec.ProvisioningClassName
			out = append(out, pod)
		}
	}
	return out, nil
}

// podUID is a stable UID for a request's pod.
func podUID(request types.UID, name string) types.UID {
	sum := sha256.Sum256([]byte(string(request) + "/" + name))
	return types.UID(hex.EncodeToString(sum[:16]))
}

// placeholder is a pod holding room on a booked node for a request: the
// given requests, in the request's namespace, owned by no one.
func placeholder(pr *autoscalingv1.ProvisioningRequest, node string, requests corev1.ResourceList) *corev1.Pod {
	name := "booking-" + pr.Name + "-" + node
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pr.Namespace, Name: name, UID: podUID(pr.UID, name),
			Annotations: map[string]string{autoscalingv1.AnnotationConsumeProvisioningRequest: pr.Name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "booking",
			Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}
