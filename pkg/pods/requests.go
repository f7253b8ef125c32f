package pods

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Requests is what p asks of a node, with Kubernetes' own arithmetic: the
// larger of its containers' sum and each init container (restartable
// sidecars counted alongside the containers), plus the pod overhead, or the
// pod-level resources when set. It is a fresh list the caller may change.
func Requests(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// Limits is p's effective limits with the same arithmetic as Requests.
func Limits(p *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
}

// SumRequests adds up the pods' Requests.
func SumRequests(ps []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range ps {
		for name, q := range Requests(p) {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}
