package observability

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestResourceLabel(t *testing.T) {
	for in, want := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              "cpu",
		corev1.ResourceEphemeralStorage: "ephemeral_storage",
		"nvidia.com/gpu":                "nvidia_com_gpu",
		"hugepages-2Mi":                 "hugepages_2mi",
	} {
		if got := resourceLabel(in); got != want {
			t.Errorf("resourceLabel(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestOwner(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"},
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", Controller: ptr.To(true)},
	}}}
	if got := owner(p); got != "apps/v1/namespaces/ns/replicasets/web-1" {
		t.Errorf("owner = %q", got)
	}
	if got := owner(&corev1.Pod{}); got != "" {
		t.Errorf("owner of a bare pod = %q", got)
	}
}

// TestPodResources: the effective request is the larger of the
// containers' sum and any init container, plus the pod overhead.
func TestPodResources(t *testing.T) {
	q := resource.MustParse
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")}, Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}}},
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}}},
		},
		InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("3")}}}},
		Overhead:       corev1.ResourceList{corev1.ResourceCPU: q("100m")},
	}}
	req, lim := podResources(p)
	if got := req[corev1.ResourceCPU]; got.Cmp(q("3100m")) != 0 {
		t.Errorf("cpu request %s, want 3100m", got.String())
	}
	if got := lim[corev1.ResourceCPU]; got.Cmp(q("2100m")) != 0 {
		t.Errorf("cpu limit %s, want 2100m", got.String())
	}
}
