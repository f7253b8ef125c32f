package state

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastApplied is kubectl's client-side apply annotation: a copy of the
// whole object as last applied, often the largest thing in its metadata.
const lastApplied = corev1.LastAppliedConfigAnnotation

// TransformPod drops from a cached Pod what no joiner controller reads, so
// the informer cache (every pod of the cluster, joiner's largest memory
// use) and every copy taken from it stay small: managedFields, kubectl's
// last-applied annotation, the kubelet's per-container statuses, the
// pod's IPs, QoS class and security context, the conditions other than
// PodScheduled and Ready, and the parts of each container that only the
// kubelet uses (command, args, environment, probes, lifecycle hooks,
// security context, volume mounts and devices). Everything the solver,
// disruption, the metrics and the nomination writer read stays: labels,
// annotations, owners, the pod's resources, ports, restart policies,
// volumes, affinity, tolerations, topology spread, node name and selector,
// priority, overhead, and the status' phase, start time, PodScheduled and
// Ready conditions and nominated node name. Writers are unaffected: they
// patch with merge patches computed between two cached copies, which
// leave dropped fields alone (no joiner writer changes a pod's
// conditions), and the nomination writer reads managedFields past the
// cache. Objects that are not pods pass through.
func TransformPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	delete(p.Annotations, lastApplied)
	p.Spec.SecurityContext = nil
	p.Status.ContainerStatuses = nil
	p.Status.InitContainerStatuses = nil
	p.Status.EphemeralContainerStatuses = nil
	p.Status.HostIP, p.Status.HostIPs, p.Status.PodIP, p.Status.PodIPs = "", nil, "", nil
	p.Status.QOSClass = ""
	p.Status.Conditions = readConditions(p.Status.Conditions)
	for i := range p.Spec.InitContainers {
		stripContainer(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		stripContainer(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		stripContainer((*corev1.Container)(&p.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return p, nil
}

// readConditions keeps the pod conditions joiner reads: PodScheduled
// (kube-scheduler's verdict, which the provisioner and the nominations
// follow) and Ready (the startup metrics). A kubelet sets three more
// (PodReadyToStartContainers, Initialized, ContainersReady) that only
// cost memory here. The slice is new when something goes, so the dropped
// conditions are not kept alive behind it.
func readConditions(conds []corev1.PodCondition) []corev1.PodCondition {
	read := func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled || c.Type == corev1.PodReady }
	n := 0
	for _, c := range conds {
		if read(c) {
			n++
		}
	}
	if n == len(conds) {
		return conds
	}
	out := make([]corev1.PodCondition, 0, n)
	for _, c := range conds {
		if read(c) {
			out = append(out, c)
		}
	}
	return out
}

// stripContainer drops the parts of a container the kubelet alone reads;
// its name, image, resources, resize policy, ports and restart policy (a
// sidecar's "Always" changes the pod's requests) stay.
func stripContainer(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	c.SecurityContext = nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
}

// TransformNode drops from a cached Node what no joiner controller reads:
// managedFields, kubectl's last-applied annotation and the kubelet's lists
// of the images on the node and of the volumes in use and attached (a
// node's images alone can be tens of kilobytes). Capacity, allocatable,
// conditions, addresses, node info, labels, taints and the provider ID
// stay. Objects that are not nodes pass through.
func TransformNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.ManagedFields = nil
	delete(n.Annotations, lastApplied)
	n.Status.Images = nil
	n.Status.VolumesInUse = nil
	n.Status.VolumesAttached = nil
	return n, nil
}

var (
	_ toolscache.TransformFunc = TransformPod
	_ toolscache.TransformFunc = TransformNode
)

// CacheOptions are the informer cache's options for joiner's manager (and
// the test managers, so every controller suite runs on the same trimmed
// objects): pods and nodes through TransformPod and TransformNode, the
// pods of one controller sharing their equal parts (podTemplates), and
// every other kind without its managedFields.
func CacheOptions() cache.Options {
	templates := newPodTemplates()
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Transform: func(obj any) (any, error) {
				obj, err := TransformPod(obj)
				if p, ok := obj.(*corev1.Pod); ok && err == nil {
					templates.share(p)
				}
				return obj, err
			}},
			&corev1.Node{}: {Transform: TransformNode},
		},
	}
}
