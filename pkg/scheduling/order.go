package scheduling

import (
	"sort"
)

// placeAll places every pending pod, tier by tier (see describeClass):
// pods that need a node of their own and other hostname-keyed pods largest
// first (first-fit decreasing); then pods pinned to zones, zone-keyed pods
// and unconstrained pods, each tier in a balancing order: each next pod is
// chosen to even out the cpu:memory mix of the node that grew last, so big
// nodes fill in every dimension at once. Pods that fail are retried while
// a round makes progress (pod affinity to pods placed later).
func (sv *solver) placeAll() {
	order := append([]*classBase(nil), sv.classes...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].less(order[j]) })
	var failed []pendingPod
	var tier []*classBase
	flush := func() {
		if len(tier) == 0 {
			return
		}
		if sv.strategy == balancedFill && tier[0].tier >= sv.balanceFrom {
			failed = append(failed, sv.placeBalanced(tier)...)
		} else {
			for _, cb := range tier {
				for _, p := range cb.pods {
					if pp := (pendingPod{pod: p, class: cb}); !sv.place(pp) {
						failed = append(failed, pp)
					}
				}
			}
		}
		tier = tier[:0]
	}
	for _, cb := range order {
		if len(tier) > 0 && tier[0].tier != cb.tier {
			flush()
		}
		tier = append(tier, cb)
	}
	flush()
	for len(failed) > 0 {
		var next []pendingPod
		for _, pp := range failed {
			if !sv.place(pp) {
				next = append(next, pp)
			}
		}
		if len(next) == len(failed) {
			break
		}
		failed = next
	}
	for _, pp := range failed {
		sv.failed = append(sv.failed, podFailure(pp))
	}
}

// shapeQueue holds the pending pods of one request shape.
type shapeQueue struct {
	req   resVec
	angle float64 // cpu share minus memory share: > 0 is cpu-heavy
	size  float64
	pods  []pendingPod
	next  int
}

func (sv *solver) placeBalanced(classes []*classBase) []pendingPod {
	if len(classes) == 0 {
		return nil
	}
	scale := sv.balanceScale()
	byShape := map[string]*shapeQueue{}
	var shapes []*shapeQueue
	for _, cb := range classes {
		k := vecKey(cb.req)
		q, ok := byShape[k]
		if !ok {
			c := float64(cb.req[resCPU]) / scale[0]
			m := float64(cb.req[resMemory]) / scale[1]
			q = &shapeQueue{req: cb.req, angle: c - m, size: max(c, m)}
			byShape[k] = q
			shapes = append(shapes, q)
		}
		for _, p := range cb.pods {
			q.pods = append(q.pods, pendingPod{pod: p, class: cb})
		}
	}
	sort.SliceStable(shapes, func(i, j int) bool {
		if shapes[i].angle != shapes[j].angle {
			return shapes[i].angle < shapes[j].angle
		}
		return shapes[i].size > shapes[j].size
	})
	var failed []pendingPod
	remaining := 0
	for _, q := range shapes {
		remaining += len(q.pods)
	}
	for ; remaining > 0; remaining-- {
		q := sv.pickShape(shapes, scale)
		pp := q.pods[q.next]
		q.next++
		if !sv.place(pp) {
			failed = append(failed, pp)
		}
	}
	return failed
}

// pickShape chooses the shape that best corrects the imbalance of the node
// that grew last: the most memory-heavy shape when it is cpu-heavy and the
// other way round (largest first among equals).
func (sv *solver) pickShape(shapes []*shapeQueue, scale [2]float64) *shapeQueue {
	d := 0.0
	if n := sv.lastGrown; n != nil {
		d = float64(n.requests[resCPU])/scale[0] - float64(n.requests[resMemory])/scale[1]
	}
	if d > 0 {
		for _, q := range shapes {
			if q.next < len(q.pods) {
				return q
			}
		}
	}
	for i := len(shapes) - 1; i >= 0; i-- {
		if q := shapes[i]; q.next < len(q.pods) {
			return q
		}
	}
	return nil
}

// balanceScale is the cpu and memory of the biggest usable instance type of
// the first NodePool, the unit the balancing order measures shares in.
func (sv *solver) balanceScale() [2]float64 {
	s := [2]float64{1, 1}
	for _, p := range sv.pools {
		if p.maxEff[resCPU] > 0 && p.maxEff[resMemory] > 0 {
			return [2]float64{float64(p.maxEff[resCPU]), float64(p.maxEff[resMemory])}
		}
	}
	return s
}

func vecKey(v resVec) string {
	b := make([]byte, 0, len(v)*8)
	for _, x := range v {
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return string(b)
}
