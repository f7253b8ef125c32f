package pods

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DaemonSetPod builds the pod ds would run on a new node: its template,
// owned by ds, with the resources the API server would give the pod when
// the DaemonSet controller creates it. The LimitRanger admission plugin
// fills every container's missing requests and limits from the
// namespace's Container LimitRanges (defaultRequest, default), and pod
// defaulting turns a limit without a request into a request of the same
// amount. Without both, a daemon whose containers only inherit their
// requests (a namespace-wide default of 2 cpu) would count as asking for
// nothing, and the node planned for it and a workload pod would be too
// small to hold both.
//
// It is the one builder of a DaemonSet's pod: the cluster state builds it
// from the DaemonSets it watches, the offline scenario adapter from the
// DaemonSets of its input, so both count the same overhead.
func DaemonSetPod(ds *appsv1.DaemonSet, limitRanges []corev1.LimitRange) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *ds.Spec.Template.Spec.DeepCopy(),
	}
	p.Namespace = ds.Namespace
	p.Name = ds.Name
	p.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kindDaemonSet, Name: ds.Name, UID: ds.UID,
		Controller: ptr.To(true),
	}}
	AdmitResources(p, limitRanges)
	return p
}

// AdmitResources gives a pod its controller has just created the resources
// the API server stores for it: every container's missing requests and
// limits from the namespace's Container LimitRanges, then requests from
// limits. The offline scenario adapter, which makes the pods of its
// workloads from their templates, admits them so.
func AdmitResources(p *corev1.Pod, limitRanges []corev1.LimitRange) {
	for i := range p.Spec.InitContainers {
		admitResources(&p.Spec.InitContainers[i].Resources, limitRanges)
	}
	for i := range p.Spec.Containers {
		admitResources(&p.Spec.Containers[i].Resources, limitRanges)
	}
}

// admitResources applies the LimitRanges' Container defaults to what a
// container does not set (defaultRequest to requests, default to limits;
// the API server has already defaulted a LimitRange's defaultRequest from
// its default), then requests from limits, as admission and defaulting do.
func admitResources(r *corev1.ResourceRequirements, limitRanges []corev1.LimitRange) {
	for _, lr := range limitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for name, q := range item.DefaultRequest {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q.DeepCopy()
				}
			}
			for name, q := range item.Default {
				if _, ok := r.Limits[name]; !ok {
					if r.Limits == nil {
						r.Limits = corev1.ResourceList{}
					}
					r.Limits[name] = q.DeepCopy()
				}
			}
		}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
}
