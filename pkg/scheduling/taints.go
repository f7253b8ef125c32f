package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Untolerated is the one definition of whether a pod with tolerations tols
// may run on a node with taints, for packages outside the solver (the
// lower bound's offerings): the first taint tols do not tolerate, and
// true; PreferNoSchedule taints count unless preferNoScheduleOK.
func Untolerated(taints []corev1.Taint, tols []corev1.Toleration, preferNoScheduleOK bool) (corev1.Taint, bool) {
	return untolerated(taints, tols, preferNoScheduleOK)
}

// untolerated returns the first taint in taints that tols do not tolerate.
// PreferNoSchedule taints count unless preferNoScheduleOK, as Karpenter
// treats them as requirements until it relaxes them. Karpenter's
// unregistered taint never counts: it is removed at registration.
func untolerated(taints []corev1.Taint, tols []corev1.Toleration, preferNoScheduleOK bool) (corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Key == v1.TaintKeyUnregistered {
			continue // never a reason: Karpenter removes it at registration
		}
		if t.Effect == corev1.TaintEffectPreferNoSchedule && preferNoScheduleOK {
			continue
		}
		if !schedcorev1.TolerationsTolerateTaint(klog.Background(), tols, t, false) {
			return *t, true
		}
	}
	return corev1.Taint{}, false
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

// ephemeralTaints are shed by a node while it initialises; they never keep
// a pod off a node that has not finished starting.
var ephemeralTaints = map[string]bool{
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	v1.TaintKeyUnregistered:                          true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
}

// existingTaints are the taints that count on an existing node.
func existingTaints(n *ExistingNode) []corev1.Taint {
	if n.Initialized {
		return n.Taints
	}
	var out []corev1.Taint
	for _, t := range n.Taints {
		if ephemeralTaints[t.Key] {
			continue
		}
		startup := false
		for _, s := range n.StartupTaints {
			if s.Key == t.Key && s.Value == t.Value && s.Effect == t.Effect {
				startup = true
			}
		}
		if !startup {
			out = append(out, t)
		}
	}
	return out
}

// daemonOverhead sums the requests of every DaemonSet pod that would land
// on a node of pool p and type t (it tolerates the pool's taints and its
// node selector and required node affinity are compatible) and lists the
// host ports they bind.
func (sv *solver) daemonOverhead(p *poolT, t *typeT) (resVec, []hostPort) {
	sum := make(resVec, len(sv.ri.names))
	var ports []hostPort
	for _, d := range sv.daemons() {
		if _, bad := untolerated(p.np.Taints, d.pod.Spec.Tolerations, true); bad {
			continue
		}
		ok := false
		for _, alt := range d.alts {
			if sv.daemonFits(p, t, alt) {
				ok = true
				break
			}
		}
		if ok {
			sum.add(d.req)
			for _, hp := range podHostPorts(d.pod) {
				if !containsPort(ports, hp) {
					ports = append(ports, hp)
				}
			}
		}
	}
	return sum, ports
}

func containsPort(ps []hostPort, h hostPort) bool {
	for _, x := range ps {
		if x == h {
			return true
		}
	}
	return false
}

func (sv *solver) daemonFits(p *poolT, t *typeT, r *reqSet) bool {
	for i, k := range r.keys {
		c := r.cons[i]
		switch k {
		case corev1.LabelTopologyZone:
			if sv.zoneMask(c)&p.zones&t.offeredZones(p.cts) == 0 {
				return false
			}
			continue
		case v1.LabelCapacityType:
			ok := false
			for ci := range sv.cts {
				if p.cts&(1<<ci) != 0 && t.avail[ci] != 0 && c.allows(sv.cts[ci]) {
					ok = true
				}
			}
			if !ok {
				return false
			}
			continue
		}
		if vals, has := t.reqs[k]; has {
			if !c.allowsAny(vals) {
				return false
			}
			continue
		}
		if pc, has := p.base.get(k); has {
			if pc.intersect(c).empty() {
				return false
			}
			continue
		}
		if !c.absent {
			return false
		}
	}
	return true
}

type daemonT struct {
	pod  *corev1.Pod
	req  resVec
	alts []*reqSet
}

func (sv *solver) daemons() []daemonT {
	if sv.daemonCache != nil {
		return *sv.daemonCache
	}
	var out []daemonT
	for _, d := range sv.snap.DaemonSets {
		alts, err := podRequirementAlternatives(d, nil)
		if err != nil {
			continue
		}
		var rs []*reqSet
		for _, a := range alts {
			rs = append(rs, sv.intern(a.build()))
		}
		out = append(out, daemonT{pod: d, req: sv.ri.vec(podRequests(d)), alts: rs})
	}
	sv.daemonCache = &out
	return out
}
