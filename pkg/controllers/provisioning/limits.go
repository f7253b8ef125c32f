package provisioning

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// plannedClaim is a NodeClaim the plan asked for, with the NodePool it comes
// from and the instance types it may launch as once limits are applied.
type plannedClaim struct {
	nodePool      *v1.NodePool
	planned       *scheduling.NewNodeClaim
	instanceTypes []*scheduling.InstanceType
	// reason labels the created NodeClaim in karpenter_nodeclaims_created_total
	// ("" is "provisioning").
	reason string
}

// fitLimits checks every planned NodeClaim against its NodePool's limits
// and the live usage, in plan order: it keeps the instance-type options
// (at most MaxInstanceTypes, cheapest first) whose capacity fits what is
// left, and counts the largest kept option as used, so the NodePool stays
// within its limits whichever option the cloud launches. A NodeClaim with
// no option left is dropped and its pods are reported unschedulable.
func (p *Provisioner) fitLimits(v *view, planned []*scheduling.NewNodeClaim) ([]plannedClaim, []scheduling.PodError) {
	var (
		out      []plannedClaim
		rejected []scheduling.PodError
	)
	for _, nc := range planned {
		np, ok := v.nodePools[nc.NodePool]
		if !ok {
			// The solver only plans from snapshot NodePools; this is a bug.
			for _, pod := range nc.Pods {
				rejected = append(rejected, scheduling.PodError{Pod: pod, Reasons: map[string]string{nc.NodePool: "the plan named a NodePool that was not in the snapshot"}})
			}
			continue
		}
		its := nc.InstanceTypes
		if len(its) > MaxInstanceTypes {
			its = its[:MaxInstanceTypes]
		}
		limits := corev1.ResourceList(np.Spec.Limits)
		if len(limits) > 0 {
			remaining := remainingLimits(limits, v.inUse[np.Name])
			var kept []*scheduling.InstanceType
			for _, it := range its {
				if fitsRemaining(it.Capacity, remaining) {
					kept = append(kept, it)
				}
			}
			if len(kept) == 0 {
				reason := fmt.Sprintf("all available instance types exceed limits for nodepool: %q", np.Name)
				for _, pod := range nc.Pods {
					rejected = append(rejected, scheduling.PodError{Pod: pod, Reasons: map[string]string{np.Name: reason}})
				}
				continue
			}
			its = kept
		}
		v.addInUse(np.Name, maxCapacity(its))
		out = append(out, plannedClaim{nodePool: np, planned: nc, instanceTypes: its})
	}
	return out, rejected
}

// remainingLimits is limits minus inUse, per limited resource.
func remainingLimits(limits, inUse corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, limit := range limits {
		r := limit.DeepCopy()
		if used, ok := inUse[name]; ok {
			r.Sub(used)
		}
		out[name] = r
	}
	return out
}

// fitsRemaining reports whether one more node of the given capacity stays
// within every remaining limit (the node itself counting one against a
// "nodes" limit).
func fitsRemaining(capacity, remaining corev1.ResourceList) bool {
	one := resource.MustParse("1")
	for name, left := range remaining {
		need, ok := capacity[name]
		if name == ResourceNodes {
			need, ok = one, true
		}
		if !ok {
			continue
		}
		if need.Cmp(left) > 0 {
			return false
		}
	}
	return true
}
