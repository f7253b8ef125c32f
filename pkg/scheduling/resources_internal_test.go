package scheduling

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestRequestVecAgreesWithPodRequests holds requestVec, its shortcut for
// pods without init containers, overhead or pod-level resources
// and the long way for the rest, to Kubernetes' own
// arithmetic (podRequests) on every kind of pod.
func TestRequestVecAgreesWithPodRequests(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	ctr := func(req corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}
	}
	always := corev1.ContainerRestartPolicyAlways
	cases := []struct {
		name string
		spec corev1.PodSpec
	}{
		{name: "one container", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "1500m", "memory", "4Gi"))}}},
		{name: "fractional millicores", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "0.0005", "memory", "100.5"))}}},
		{name: "no requests", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(nil)}}},
		{name: "an extended resource and a pods request", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "1", "example.com/gpu", "2", "pods", "5"))}}},
		{name: "two containers", spec: corev1.PodSpec{Containers: []corev1.Container{ctr(rl("cpu", "1", "memory", "1Gi")), ctr(rl("cpu", "250m"))}}},
		{name: "three containers whose fractions round up only once added", spec: corev1.PodSpec{Containers: []corev1.Container{
			ctr(rl("cpu", "0.0004", "memory", "100.5")), ctr(rl("cpu", "0.0004", "memory", "0.5", "example.com/gpu", "1")), ctr(rl("pods", "3", "unknown.example.com/x", "1"))}}},
		{name: "an init container larger than the container", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{ctr(rl("cpu", "3"))}, Containers: []corev1.Container{ctr(rl("cpu", "1", "memory", "1Gi"))}}},
		{name: "a sidecar", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "500m")}}},
			Containers:     []corev1.Container{ctr(rl("cpu", "1"))}}},
		{name: "overhead", spec: corev1.PodSpec{Overhead: rl("cpu", "100m", "memory", "64Mi"), Containers: []corev1.Container{ctr(rl("cpu", "1"))}}},
		{name: "empty pod-level resources", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{}, Containers: []corev1.Container{ctr(rl("cpu", "1")), ctr(rl("memory", "1Gi"))}}},
		{name: "pod-level limits only", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Limits: rl("cpu", "4")}, Containers: []corev1.Container{ctr(rl("cpu", "1"))}}},
		{name: "pod-level requests of an unsupported resource", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: rl("example.com/gpu", "1")}, Containers: []corev1.Container{ctr(rl("cpu", "1"))}}},
		{name: "pod-level requests", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "4", "memory", "8Gi")}, Containers: []corev1.Container{ctr(rl("cpu", "1"))}}},
	}
	ri := newResourceIndex([]corev1.ResourceList{rl("example.com/gpu", "1")})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.spec}
			if got, want := ri.requestVec(p), ri.vec(podRequests(p)); !slices.Equal(got, want) {
				t.Errorf("requestVec = %v, podRequests gives %v", got, want)
			}
		})
	}
}
