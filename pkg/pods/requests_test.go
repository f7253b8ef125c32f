package pods_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/pods"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ctr(name string, requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests}}
}

func sidecar(name string, requests corev1.ResourceList) corev1.Container {
	c := ctr(name, requests)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// RequestsInto adds what Kubernetes' arithmetic (Requests) says a pod asks
// to what the list already holds, and the list it fills shares nothing
// with the pod's spec.
func TestRequestsInto(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		// sum is what the caller's list holds before; want what it holds
		// after.
		sum, want corev1.ResourceList
	}{
		{name: "no requests", spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", nil)}}, want: rl()},
		{name: "one container", spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("cpu", "250m", "memory", "1Gi"))}}, want: rl("cpu", "250m", "memory", "1Gi")},
		{name: "added to what the list holds", spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("cpu", "250m"))}}, sum: rl("cpu", "1", "pods", "3"), want: rl("cpu", "1250m", "pods", "3")},
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("cpu", "250m", "memory", "1Gi")), ctr("b", rl("cpu", "1", "nvidia.com/gpu", "1"))}},
			want: rl("cpu", "1250m", "memory", "1Gi", "nvidia.com/gpu", "1"),
		},
		{
			name: "overhead is added",
			spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("cpu", "1"))}, Overhead: rl("cpu", "100m", "memory", "64Mi")},
			want: rl("cpu", "1100m", "memory", "64Mi"),
		},
		{
			name: "an init container larger than the containers sets the request",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{ctr("init", rl("cpu", "2"))}, Containers: []corev1.Container{ctr("a", rl("cpu", "500m", "memory", "1Gi"))}},
			want: rl("cpu", "2", "memory", "1Gi"),
		},
		{
			name: "a smaller init container adds nothing",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{ctr("init", rl("cpu", "100m"))}, Containers: []corev1.Container{ctr("a", rl("cpu", "500m"))}},
			want: rl("cpu", "500m"),
		},
		{
			name: "a sidecar runs beside the containers and the later init containers",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar("proxy", rl("cpu", "200m")), ctr("init", rl("cpu", "1"))},
				Containers:     []corev1.Container{ctr("a", rl("cpu", "500m"))},
			},
			want: rl("cpu", "1200m"),
		},
		{
			name: "pod-level requests replace the containers' sum",
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "3")},
				Containers: []corev1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"))},
				Overhead:   rl("cpu", "100m"),
			},
			want: rl("cpu", "3100m", "memory", "1Gi"),
		},
		{
			// "1.5Gi" parses to a Quantity in decimal form, which points at
			// its value: a list that stored the spec's quantity would share
			// it with the spec.
			name: "quantities in decimal form",
			spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("memory", "1.5Gi"))}},
			want: rl("memory", "1.5Gi"),
		},
		{
			name: "quantities in decimal form added to the list's",
			spec: corev1.PodSpec{Containers: []corev1.Container{ctr("a", rl("memory", "1.5Gi")), ctr("b", rl("memory", "0.5Gi"))}},
			sum:  rl("memory", "0.25Gi"),
			want: rl("memory", "2.25Gi"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.spec}
			before := p.DeepCopy()
			sum := tc.sum.DeepCopy()
			if sum == nil {
				sum = corev1.ResourceList{}
			}
			pods.RequestsInto(p, sum)
			if !equal(sum, tc.want) {
				t.Fatalf("RequestsInto = %v, want %v", sum, tc.want)
			}
			// Kubernetes' arithmetic is the judge of what the pod asks.
			fromScratch := corev1.ResourceList{}
			pods.RequestsInto(p, fromScratch)
			if k8s := pods.Requests(p); !equal(fromScratch, k8s) {
				t.Errorf("RequestsInto into an empty list = %v, Requests = %v", fromScratch, k8s)
			}
			// Changing the sums must leave the pod as it was.
			for _, list := range []corev1.ResourceList{sum, fromScratch} {
				for name, q := range list {
					q.Add(resource.MustParse("7"))
					list[name] = q
					if dec := list[name]; dec.AsDec() != nil {
						dec.AsDec().SetUnscaled(42)
					}
				}
			}
			if !equalSpec(before, p) {
				t.Errorf("changing the sums changed the pod's spec: %v, was %v", p.Spec, before.Spec)
			}
		})
	}
}

// A pod without init containers or pod-level requests is summed without
// allocating, into a list that holds its resources already or into a small
// one made for it.
func TestRequestsIntoDoesNotAllocate(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{ctr("a", rl("cpu", "250m", "memory", "1Gi")), ctr("b", rl("cpu", "1"))},
		Overhead:   rl("cpu", "10m"),
	}}
	sum := corev1.ResourceList{}
	pods.RequestsInto(p, sum)
	if allocs := testing.AllocsPerRun(100, func() {
		clear(sum)
		pods.RequestsInto(p, sum)
	}); allocs != 0 {
		t.Errorf("RequestsInto allocated %v times per pod, want 0", allocs)
	}
	// A small list made for one pod stays on the stack (disruption's
	// capacity sums every pod so): RequestsInto must not let it escape.
	var cpu resource.Quantity
	if allocs := testing.AllocsPerRun(100, func() {
		one := make(corev1.ResourceList, 4)
		pods.RequestsInto(p, one)
		cpu = one[corev1.ResourceCPU]
	}); allocs != 0 {
		t.Errorf("a list made for one pod allocated %v times, want 0", allocs)
	}
	if cpu.Cmp(resource.MustParse("1260m")) != 0 {
		t.Errorf("cpu %s, want 1260m", cpu.String())
	}
}

func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if w, ok := b[name]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func equalSpec(a, b *corev1.Pod) bool {
	lists := func(p *corev1.Pod) []corev1.ResourceList {
		var out []corev1.ResourceList
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			out = append(out, c.Resources.Requests)
		}
		out = append(out, p.Spec.Overhead)
		if p.Spec.Resources != nil {
			out = append(out, p.Spec.Resources.Requests)
		}
		return out
	}
	la, lb := lists(a), lists(b)
	for i := range la {
		if !equal(la[i], lb[i]) {
			return false
		}
	}
	return len(la) == len(lb)
}

// NonZeroRequestsInto counts a container's missing cpu or memory request
// at kube-scheduler's non-zero defaults (100m, 200 MiB), but not an
// explicit zero; a pod whose containers request both is summed as
// RequestsInto sums it.
func TestNonZeroRequestsInto(t *testing.T) {
	for _, tc := range []struct {
		name             string
		containers, init []corev1.Container
		overhead         corev1.ResourceList
		want             corev1.ResourceList
	}{
		{name: "both requested", containers: []corev1.Container{ctr("a", rl("cpu", "1", "memory", "1Gi"))}, want: rl("cpu", "1", "memory", "1Gi")},
		{name: "nothing requested", containers: []corev1.Container{ctr("a", nil)}, want: rl("cpu", "100m", "memory", "200Mi")},
		{name: "explicit zero cpu, one container without cpu", containers: []corev1.Container{ctr("a", rl("cpu", "0", "memory", "1Gi")), ctr("b", rl("memory", "1Gi"))},
			want: rl("cpu", "100m", "memory", "2Gi")},
		{name: "overhead added", containers: []corev1.Container{ctr("a", rl("cpu", "250m", "memory", "1Gi"))}, overhead: rl("cpu", "100m", "memory", "64Mi"), want: rl("cpu", "350m", "memory", "1088Mi")},
		{name: "init container without requests", containers: []corev1.Container{ctr("a", rl("cpu", "50m", "memory", "100Mi"))}, init: []corev1.Container{ctr("i", nil)},
			want: rl("cpu", "100m", "memory", "200Mi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers, InitContainers: tc.init, Overhead: tc.overhead}}
			got := corev1.ResourceList{}
			pods.NonZeroRequestsInto(p, got)
			if !equal(got, tc.want) {
				t.Errorf("non-zero requests %v, want %v", got, tc.want)
			}
		})
	}
}
