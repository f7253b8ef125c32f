package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Requests is what p asks of a node, with Kubernetes' own arithmetic: the
// larger of its containers' sum and each init container (restartable
// sidecars counted alongside the containers), plus the pod overhead, or the
// pod-level resources when set. It is a fresh list the caller may change.
func Requests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// RequestsInto adds Requests(p) to sum, without building a list for the
// pods most clusters hold: with no init containers and no pod-level
// requests, a pod asks the sum of its containers' requests plus its
// overhead, and those are added to sum as they are read. Other pods go
// through Kubernetes' arithmetic (Requests). sum gets its own quantities:
// nothing in it aliases p's spec, so a caller may change it freely.
func RequestsInto(p *corev1.Pod, sum corev1.ResourceList) {
	if len(p.Spec.InitContainers) > 0 || resourcehelper.IsPodLevelRequestsSet(p) {
		addInto(sum, Requests(p))
		return
	}
	for i := range p.Spec.Containers {
		addInto(sum, p.Spec.Containers[i].Resources.Requests)
	}
	addInto(sum, p.Spec.Overhead)
}

// addInto adds rl to sum. Each quantity is added to sum's own (Add on a
// copy of sum's value), never stored as it is: a Quantity held in decimal
// form shares its value with the list it came from.
func addInto(sum, rl corev1.ResourceList) {
	for name, q := range rl {
		s := sum[name]
		s.Add(q)
		sum[name] = s
	}
}

// Limits is p's effective limits with the same arithmetic as Requests.
func Limits(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
}

// SumRequests adds up the pods' Requests.
func SumRequests(ps []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range ps {
		RequestsInto(p, out)
	}
	return out
}

// nonZeroDefaults are what kube-scheduler's resource scores count for a
// container that requests no cpu or memory (DefaultMilliCPURequest and
// DefaultMemoryRequest of k8s.io/kubernetes/pkg/scheduler/util), so that
// pods without requests do not all pile onto one node.
var nonZeroDefaults = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(100, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(200*1024*1024, resource.DecimalSI),
}

// NonZeroRequestsInto adds to sum what kube-scheduler's NodeResourcesFit
// score counts of p: Requests, a container (or init container) that
// requests no cpu or memory counted at 100m and 200 MiB of it. A pod whose
// containers all request both is summed as RequestsInto sums it.
func NonZeroRequestsInto(p *corev1.Pod, sum corev1.ResourceList) {
	if requestsCPUAndMemory(p.Spec.Containers) && requestsCPUAndMemory(p.Spec.InitContainers) {
		RequestsInto(p, sum)
		return
	}
	addInto(sum, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults}))
}

func requestsCPUAndMemory(cs []corev1.Container) bool {
	for i := range cs {
		r := cs[i].Resources.Requests
		if _, ok := r[corev1.ResourceCPU]; !ok {
			return false
		}
		if _, ok := r[corev1.ResourceMemory]; !ok {
			return false
		}
	}
	return true
}
