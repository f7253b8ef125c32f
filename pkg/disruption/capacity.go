package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// vec is the resources the capacity bounds look at: cpu (millicores),
// memory (bytes) and pods.
type vec [3]int64

func (a vec) add(b vec) vec { return vec{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }
func (a vec) sub(b vec) vec { return vec{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }
func (a vec) fits(b vec) bool {
	return a[0] <= b[0] && a[1] <= b[1] && a[2] <= b[2]
}

func vecOf(rl corev1.ResourceList) vec {
	return vec{rl.Cpu().MilliValue(), rl.Memory().Value(), rl.Pods().Value()}
}

// capacity holds cheap necessary conditions the searches use to skip
// simulations that cannot succeed: a set of nodes can only go if their
// pods' requests fit in the room left on the other nodes (plus one new
// node for a replacement). The solver decides; these bounds only prune.
type capacity struct {
	podReq map[*corev1.Pod]vec
	// spare is each schedulable node's free room, by name; total their sum.
	spare map[string]vec
	total vec
	// allocatable is each node's allocatable, by name.
	allocatable map[string]vec
	// largest is, per resource, the most any launchable type offers.
	largest vec
}

// newCapacity reads snap's room; reqs, when set, is the pods' requests
// another engine of the same decision has read (a pod's requests never
// change), and is added to.
func newCapacity(snap *scheduling.Snapshot, reqs map[*corev1.Pod]vec) *capacity {
	if reqs == nil {
		reqs = map[*corev1.Pod]vec{}
	}
	c := &capacity{podReq: reqs, spare: map[string]vec{}, allocatable: map[string]vec{}}
	for _, n := range snap.Nodes {
		used := vec{}
		for _, p := range n.Pods {
			used = used.add(c.request(p))
		}
		c.allocatable[n.Name] = vecOf(n.Allocatable)
		if !n.Initialized || n.MarkedForDeletion {
			continue
		}
		free := vecOf(n.Allocatable).sub(used)
		for i := range free {
			free[i] = max(free[i], 0)
		}
		c.spare[n.Name] = free
		c.total = c.total.add(free)
	}
	for _, its := range snap.InstanceTypes {
		for _, it := range its {
			a := vecOf(it.Allocatable())
			for i := range a {
				c.largest[i] = max(c.largest[i], a[i])
			}
		}
	}
	return c
}

// request is a pod's requests (cached: the searches ask many times). Every
// decision reads every pod, so they are summed (pods.RequestsInto) into a
// list that stays on the stack, not a fresh one on the heap per pod.
func (c *capacity) request(p *corev1.Pod) vec {
	if v, ok := c.podReq[p]; ok {
		return v
	}
	sum := make(corev1.ResourceList, 4) // on the stack: it does not escape
	pods.RequestsInto(p, sum)
	v := vecOf(sum)
	v[2] = 1
	c.podReq[p] = v
	return v
}

// demand is what a candidate's pods need elsewhere.
func (c *capacity) demand(cand *candidate) vec {
	d := vec{}
	for _, p := range cand.pods {
		d = d.add(c.request(p))
	}
	return d
}
