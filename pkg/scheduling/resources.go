package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// resourceIndex interns resource names into dense vector positions. cpu is
// always 0 (in millicores), memory 1 and pods 2; everything else (bytes or
// counts) follows in name order so vectors compare position by position.
type resourceIndex struct {
	names []corev1.ResourceName
	pos   map[corev1.ResourceName]int
}

const (
	resCPU = iota
	resMemory
	resPods
)

func newResourceIndex(lists ...[]corev1.ResourceList) *resourceIndex {
	ri := &resourceIndex{pos: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		ri.pos[n] = len(ri.names)
		ri.names = append(ri.names, n)
	}
	var extra []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	for _, ls := range lists {
		for _, l := range ls {
			for n := range l {
				if _, ok := ri.pos[n]; !ok && !seen[n] {
					seen[n] = true
					extra = append(extra, n)
				}
			}
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	for _, n := range extra {
		ri.pos[n] = len(ri.names)
		ri.names = append(ri.names, n)
	}
	return ri
}

// resVec is a resource vector in resourceIndex order.
type resVec []int64

func (ri *resourceIndex) vec(l corev1.ResourceList) resVec {
	v := make(resVec, len(ri.names))
	for n, q := range l {
		p, ok := ri.pos[n]
		if !ok {
			continue
		}
		v[p] = quantityValue(n, q)
	}
	return v
}

func quantityValue(n corev1.ResourceName, q resource.Quantity) int64 {
	if n == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// list turns a vector back into a ResourceList, leaving zero entries out
// (pods are always reported).
func (ri *resourceIndex) list(v resVec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 && i != resPods {
			continue
		}
		out[ri.names[i]] = ri.quantity(i, x)
	}
	return out
}

// quantity is dimension i's value x as a Quantity in its usual format.
func (ri *resourceIndex) quantity(i int, x int64) resource.Quantity {
	switch n := ri.names[i]; {
	case n == corev1.ResourceCPU:
		return *resource.NewMilliQuantity(x, resource.DecimalSI)
	case n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage || isHugePages(n):
		return *resource.NewQuantity(x, resource.BinarySI)
	default:
		return *resource.NewQuantity(x, resource.DecimalSI)
	}
}

func isHugePages(n corev1.ResourceName) bool {
	return len(n) > len(corev1.ResourceHugePagesPrefix) && string(n[:len(corev1.ResourceHugePagesPrefix)]) == corev1.ResourceHugePagesPrefix
}

func (v resVec) add(o resVec) {
	for i := range v {
		v[i] += o[i]
	}
}

// fitsAdd reports whether base+add <= limit in every dimension.
func fitsAdd(base, add, limit resVec) bool {
	for i := range limit {
		if base[i]+add[i] > limit[i] {
			return false
		}
	}
	return true
}

func (v resVec) fits(limit resVec) bool {
	for i := range limit {
		if v[i] > limit[i] {
			return false
		}
	}
	return true
}

func (v resVec) clone() resVec { return append(resVec(nil), v...) }

// podRequests is the pod's scheduling footprint: Kubernetes' own request
// arithmetic (init-container max, restartable sidecars, pod overhead,
// pod-level resources) plus one "pods" slot.
func podRequests(p *corev1.Pod) corev1.ResourceList {
	l := pods.Requests(p)
	l[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return l
}

// requestVec is podRequests(p) as a vector. A pod with no init
// containers, overhead or pod-level requests (most pods; an empty
// spec.resources sets none) asks exactly
// the sum of its containers' requests, read without building a list:
// consolidation's simulations read every bound pod of the cluster each
// time, and building the lists was a tenth of their CPU. Several
// containers' quantities are added before rounding, as Kubernetes adds
// them.
func (ri *resourceIndex) requestVec(p *corev1.Pod) resVec {
	if len(p.Spec.Containers) == 0 || len(p.Spec.InitContainers) > 0 || p.Spec.Overhead != nil || (p.Spec.Resources != nil && len(p.Spec.Resources.Requests) > 0) {
		return ri.vec(podRequests(p))
	}
	var v resVec
	if len(p.Spec.Containers) == 1 {
		v = ri.vec(p.Spec.Containers[0].Resources.Requests)
	} else {
		sums := make([]resource.Quantity, len(ri.names))
		for i := range p.Spec.Containers {
			for n, q := range p.Spec.Containers[i].Resources.Requests {
				if at, ok := ri.pos[n]; ok {
					sums[at].Add(q)
				}
			}
		}
		v = make(resVec, len(ri.names))
		for i, q := range sums {
			v[i] = quantityValue(ri.names[i], q)
		}
	}
	v[resPods] = 1
	return v
}

// allocatable returns Capacity minus overhead as a vector (floored at 0).
func (ri *resourceIndex) allocatable(it *InstanceType) resVec {
	v := ri.vec(it.Capacity)
	for _, rl := range []corev1.ResourceList{it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
		o := ri.vec(rl)
		for i := range v {
			v[i] -= o[i]
		}
	}
	// Hugepages are carved out of memory.
	for i, n := range ri.names {
		if isHugePages(n) {
			v[resMemory] -= v[i]
		}
	}
	for i := range v {
		if v[i] < 0 {
			v[i] = 0
		}
	}
	return v
}

// withoutDevices drops the device dimensions from a list: they are the
// solver's bookkeeping of DRA claims, not resources a NodeClaim requests.
func (sv *solver) withoutDevices(l corev1.ResourceList) corev1.ResourceList {
	for n := range l {
		if sv.deviceDims[n] {
			delete(l, n)
		}
	}
	return l
}

// nodeAlloc is what pods may use on an existing node, its published
// devices included when they are planned.
func (sv *solver) nodeAlloc(en *ExistingNode) resVec {
	v := sv.ri.vec(en.Allocatable)
	if sv.planDevices() {
		sv.addDevices(v, sv.snap.Devices.Nodes[en.Name])
	}
	return v
}
