package lowerbound

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// podClass is a set of pending pods the configuration program cannot tell
// apart: the same requests, the same hostname anti-affinity groups and the
// same offerings they may run on.
type podClass struct {
	req    []int64 // per dimension
	count  int
	groups []int // anti-affinity groups (at most one member per node)
	pod    *corev1.Pod
}

// offering is one way to buy a node: a NodePool's instance type in one zone
// and capacity type, with what it holds after DaemonSet overhead, which
// classes may run on it, and its price.
type offering struct {
	name string
	typ  *scheduling.InstanceType
	list float64 // the offering's list price
	// price is what a node of the offering costs before its pods' CPU:
	// scheduling.NodePrice with none requested.
	price   float64
	cap     []int64 // per dimension, after DaemonSet overhead
	allowed []bool  // per class
	sig     string  // allowed, as a key
	// daemonCPU is the DaemonSet pods' CPU (millicores) on the node, for
	// the credits of a burstable type.
	daemonCPU int64
	// burst is set on the variant of a burstable type that pays credits
	// (its CPU not cut to the baseline), for its linear form.
	burst *scheduling.Burst
}

// paysCredits reports whether the offering's price grows with its pods'
// CPU (by burst.CreditRate a millicore above the baseline).
func (o *offering) paysCredits() bool { return o.burst.CreditRate() > 0 }

// creditFloor is the constant of the offering's price as a linear form of
// its pods' CPU: the price before credits plus the credits' linear form at
// the DaemonSet pods' CPU (negative while the baseline is not used up).
// A configuration above the baseline costs exactly this plus CreditRate a
// millicore of its pods' CPU; one below it, more.
func (o *offering) creditFloor() float64 { return o.price + o.burst.CreditLine(o.daemonCPU) }

// dims are the resources the program counts: pods always, and every
// resource a pending pod requests.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

func newDims(pending []*corev1.Pod) dims {
	set := map[corev1.ResourceName]bool{corev1.ResourcePods: true}
	for _, p := range pending {
		for name, q := range pods.Requests(p) {
			if q.Sign() > 0 {
				set[name] = true
			}
		}
	}
	d := dims{index: map[corev1.ResourceName]int{}}
	for name := range set {
		d.names = append(d.names, name)
	}
	slices.Sort(d.names)
	for i, name := range d.names {
		d.index[name] = i
	}
	return d
}

// vector is rl in the program's integer units: millicores for cpu, bytes
// for memory and storage, milli-units for everything else (pods included,
// so one pod is 1000).
func (d dims) vector(rl corev1.ResourceList) []int64 {
	v := make([]int64, len(d.names))
	for i, name := range d.names {
		if q, ok := rl[name]; ok {
			v[i] = units(name, q.MilliValue(), q.Value())
		}
	}
	return v
}

func units(name corev1.ResourceName, milli, value int64) int64 {
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return value
	}
	return milli
}

// podVector is one pod's requests with its pod slot.
func (d dims) podVector(p *corev1.Pod) []int64 {
	v := d.vector(pods.Requests(p))
	v[d.index[corev1.ResourcePods]] = 1000
	return v
}

// buildClasses groups the pending pods (DaemonSet-owned ones left out) by
// requests, anti-affinity groups and scheduling constraints; pods of one
// class keep one representative for the offering checks.
func buildClasses(pending []*corev1.Pod, d dims) ([]podClass, map[*corev1.Pod]int) {
	groups := antiGroups(pending)
	byKey := map[string]int{}
	var out []podClass
	of := map[*corev1.Pod]int{}
	for _, p := range pending {
		if pods.IsOwnedByDaemonSet(p) {
			continue
		}
		req := d.podVector(p)
		key := fmt.Sprint(req, groups[p], placementKey(p))
		i, ok := byKey[key]
		if !ok {
			i = len(out)
			byKey[key] = i
			out = append(out, podClass{req: req, groups: groups[p], pod: p})
		}
		out[i].count++
		of[p] = i
	}
	return out, of
}

// placementKey is what decides where a pod may run among offerings: its
// node selector, required node affinity and tolerations.
func placementKey(p *corev1.Pod) string {
	var b strings.Builder
	keys := make([]string, 0, len(p.Spec.NodeSelector))
	for k := range p.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s;", k, p.Spec.NodeSelector[k])
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		fmt.Fprintf(&b, "|%v", a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	fmt.Fprintf(&b, "|%v", p.Spec.Tolerations)
	return b.String()
}

// antiGroups numbers the groups distinctNodes counts (pods sharing one
// required hostname anti-affinity term that selects each of them) and
// lists each member's groups.
func antiGroups(pending []*corev1.Pod) map[*corev1.Pod][]int {
	out := map[*corev1.Pod][]int{}
	forEachAntiGroupMember(pending, func(p *corev1.Pod, group int) {
		out[p] = append(out[p], group)
	})
	return out
}

// offeringLabels are the labels a node of pool np and type it, bought in
// zone and capacityType, carries, each with the values it may take: the
// zone, capacity type and NodePool, the pool's template labels, and the
// type's requirements. A label not listed is one the offering does not
// decide.
func offeringLabels(np *scheduling.NodePool, it *scheduling.InstanceType, zone, capacityType string) map[string][]string {
	out := make(map[string][]string, len(it.Requirements)+len(np.Labels)+3)
	maps.Copy(out, it.Requirements)
	for k, v := range np.Labels {
		out[k] = []string{v}
	}
	out[labelZone] = []string{zone}
	out[v1.LabelCapacityType] = []string{capacityType}
	out[v1.LabelNodePool] = []string{np.Name}
	return out
}

// admits reports whether pod p may run on a node of pool np whose labels
// are labels (offeringLabels): it tolerates the pool's taints, and its
// node selector and required node affinity can hold for some node the
// offering launches. A label whose value the offering does not decide is
// taken as matching, so the check errs towards allowing (which only
// loosens the bound); each requirement is decided by
// v1.RequirementAdmitsAny.
func admits(p *corev1.Pod, np *scheduling.NodePool, labels map[string][]string) bool {
	if _, bad := scheduling.Untolerated(np.Taints, p.Spec.Tolerations, true); bad {
		return false
	}
	match := func(key string, op corev1.NodeSelectorOperator, vals []string) bool {
		cands, known := labels[key]
		return !known || v1.RequirementAdmitsAny(op, vals, cands)
	}
	for k, v := range p.Spec.NodeSelector {
		if !match(k, corev1.NodeSelectorOpIn, []string{v}) {
			return false
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			if !match(e.Key, e.Operator, e.Values) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
