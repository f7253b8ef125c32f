package provisioningrequest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	"github.com/joiner-dev/joiner/pkg/gang"
)

// placeholder is a pod holding room on a booked node for a request: the
// given requests, in the request's namespace, owned by no one.
func placeholder(pr *autoscalingv1.ProvisioningRequest, node string, requests corev1.ResourceList) *corev1.Pod {
	name := "booking-" + pr.Name + "-" + node
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pr.Namespace, Name: name, UID: gang.UID(pr.UID, name),
			Annotations: map[string]string{autoscalingv1.AnnotationConsumeProvisioningRequest: pr.Name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "booking",
			Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}
