package scheduling

// The per-pod attempt: which zones and capacity types the pod's own
// topology allows right now, and in which order to try them.

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// attempt is the per-pod context of one placement try: the zones the
// pod's own topology allows and prefers right now.
type attempt struct {
	c         *podClass
	allowed   uint64 // zones allowed by own zone-keyed topology
	preferred uint64 // zones that keep other pods' zone spread balanced
	zoneRank  []int  // candidate zone order for pinning
	ctAllowed uint32 // capacity types allowed by own capacity-type-keyed topology
	ctRank    []int
	// mustJoin is set when the pod cannot have a node of its own (hostname
	// affinity to pods already placed), so growing a node is always worth it.
	mustJoin bool
}

func (sv *solver) newAttempt(c *podClass) *attempt {
	return sv.resetAttempt(new(attempt), c)
}

// resetAttempt makes a the attempt of a pod of class c, keeping the
// storage of its rankings: the local searches take a pod off and try it
// elsewhere thousands of times, each attempt dropped after the try.
func (sv *solver) resetAttempt(a *attempt, c *podClass) *attempt {
	*a = attempt{c: c, allowed: c.zones, preferred: c.zones, ctAllowed: c.cts, zoneRank: a.zoneRank[:0], ctRank: a.ctRank[:0]}
	cb := c.base
	if cb.ctRelevant {
		sv.capacityTypeTopology(a)
	}
	if !cb.zoneRelevant {
		return a
	}
	var score [MaxZones]int
	for _, g := range c.own {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		var ok uint64
		for zi, z := range sv.zones {
			if sv.domainAllowed(g, cb, z, m) {
				ok |= 1 << zi
			}
			if g.kind == kindSpread {
				score[zi] += g.counts[z]
			}
		}
		a.allowed &= ok
	}
	a.preferred = a.allowed
	for _, g := range cb.selectedBy {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		var ok uint64
		switch g.kind {
		case kindAnti:
			for zi, z := range sv.zones {
				if g.owners[z] == 0 {
					ok |= 1 << zi
				}
			}
			a.allowed &= ok
			a.preferred &= ok
		case kindSpread:
			m := sv.spreadMin(g)
			for zi, z := range sv.zones {
				if g.counts[z]+1-m <= int(g.maxSkew) {
					ok |= 1 << zi
				}
				score[zi] += g.counts[z]
			}
			if a.preferred&ok != 0 {
				a.preferred &= ok
			}
		}
	}
	for zi := range sv.zones {
		if a.allowed&(1<<zi) != 0 {
			a.zoneRank = append(a.zoneRank, zi)
		}
	}
	slices.SortStableFunc(a.zoneRank, func(zi, zj int) int {
		pi, pj := a.preferred&(1<<zi) != 0, a.preferred&(1<<zj) != 0
		switch {
		case pi && !pj:
			return -1
		case pj && !pi:
			return 1
		}
		return cmp.Compare(score[zi], score[zj])
	})
	return a
}

// capacityTypeTopology narrows the capacity types a pod's own
// capacity-type-keyed topology allows, least loaded first.
func (sv *solver) capacityTypeTopology(a *attempt) {
	c := a.c
	var score [MaxCapacityTypes]int
	for _, g := range c.own {
		if g.key != v1.LabelCapacityType {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		var ok uint32
		for ci, ct := range sv.cts {
			if sv.domainAllowed(g, c.base, ct, m) {
				ok |= 1 << ci
			}
			score[ci] += g.counts[ct]
		}
		a.ctAllowed &= ok
	}
	for ci := range sv.cts {
		if a.ctAllowed&(1<<ci) != 0 {
			a.ctRank = append(a.ctRank, ci)
		}
	}
	slices.SortStableFunc(a.ctRank, func(ci, cj int) int { return cmp.Compare(score[ci], score[cj]) })
}
