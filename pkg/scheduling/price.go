package scheduling

import (
	"github.com/joiner-dev/joiner/pkg/pods"
	corev1 "k8s.io/api/core/v1"
)

// Burst describes a burstable instance type launched in unlimited credit
// mode (EC2's default for T3, T3a and T4g): CPU it uses above its baseline
// is billed as surplus credits on top of the offering's price.
type Burst struct {
	// BaselineMilliCPU is the CPU the type sustains without credits: its
	// baseline share per vCPU times its vCPUs, in millicores.
	BaselineMilliCPU int64
	// SurplusPerVCPUHour is what one vCPU-hour above the baseline costs, $.
	SurplusPerVCPUHour float64
}

// Price is what a node costs per hour and what that is made of.
type Price struct {
	// List is the offering's price, what Karpenter compares.
	List float64
	// Credits are a burstable type's surplus CPU credits for the CPU its
	// pods request above the type's baseline.
	Credits float64
	// Volumes are the node's EBS volumes (its node class's block device
	// mappings).
	Volumes float64
}

// Total is the node's hourly price.
func (p Price) Total() float64 { return p.List + p.Credits + p.Volumes }

// NodePrice is the one definition of what a node of type it, bought at an
// offering whose price is list, costs per hour when the pods on it
// (DaemonSet pods included) request cpuMilli millicores of CPU. Under the
// billed model (listOnly false) that is the list price, plus surplus
// credits for the requested CPU above a burstable type's baseline, plus the
// node's volumes; with listOnly it is the list price alone, as Karpenter
// counts it.
//
// Requests stand for use: a pod is assumed to use the CPU it requests, all
// the time. Pods that idle below their requests pay fewer credits than
// this; pods that run above them, more.
func NodePrice(it *InstanceType, list float64, cpuMilli int64, listOnly bool) Price {
	p := Price{List: list}
	if listOnly {
		return p
	}
	p.Volumes = it.VolumePrice
	p.Credits = it.Burst.credits(cpuMilli)
	return p
}

// credits is the surplus credits' price per hour for cpuMilli millicores
// of use: the positive part of CreditLine; zero for a nil Burst.
func (b *Burst) credits(cpuMilli int64) float64 {
	if b == nil || cpuMilli <= b.BaselineMilliCPU {
		return 0
	}
	return b.CreditLine(cpuMilli)
}

// CreditLine is the one linear form of a burstable type's surplus credits:
// CreditRate per millicore of requested CPU above the baseline, so
// CreditRate·(cpuMilli − BaselineMilliCPU) per hour. It is negative below
// the baseline, where a node pays nothing; NodePrice charges its positive
// part. A linear program that prices credits (lowerbound's) takes
// CreditRate as each requested millicore's coefficient and CreditLine at
// the CPU already committed (DaemonSet pods) as the constant. Zero for a
// nil Burst.
func (b *Burst) CreditLine(cpuMilli int64) float64 {
	if b == nil {
		return 0
	}
	return float64(cpuMilli-b.BaselineMilliCPU) / 1000 * b.SurplusPerVCPUHour
}

// CreditRate is CreditLine's slope: what one more millicore of requested
// CPU above the baseline adds per hour, $. Zero for a nil Burst.
func (b *Burst) CreditRate() float64 {
	if b == nil {
		return 0
	}
	return b.SurplusPerVCPUHour / 1000
}

// ExistingNodePrice is what a running node costs per hour: its offering's
// list price (type typ in zone with capacityType, among its), priced by
// NodePrice with the CPU its pods request. False when none of its has that
// offering.
func ExistingNodePrice(its []*InstanceType, typ, zone, capacityType string, pods []*corev1.Pod, listOnly bool) (Price, bool) {
	for _, it := range its {
		if it.Name != typ {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return NodePrice(it, o.Price, PodsMilliCPU(pods), listOnly), true
			}
		}
	}
	return Price{}, false
}

// PodsMilliCPU is the CPU the pods request, in millicores (init
// containers, sidecars and pod overhead counted as the scheduler counts
// them).
func PodsMilliCPU(ps []*corev1.Pod) int64 {
	var total int64
	for _, p := range ps {
		if q, ok := pods.Requests(p)[corev1.ResourceCPU]; ok {
			total += q.MilliValue()
		}
	}
	return total
}
