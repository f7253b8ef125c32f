package scheduling

// nodeState is one node under packing, existing or planned, and the
// verdicts its checks return.

import (
	corev1 "k8s.io/api/core/v1"
)

// nodeState is an existing node (ex != nil) or a NodeClaim being planned.
type nodeState struct {
	idx int
	ex  *ExistingNode

	// Existing nodes.
	alloc     resVec
	exTaints  []corev1.Taint
	volumes   map[string]int // attached CSI volumes per driver
	volClaims map[string]bool
	// exZone and exCT are the bits of the node's zone and capacity-type
	// labels (0 when it has none, or one the snapshot's offerings do not
	// name), read once: classes are checked against every existing node.
	exZone uint64
	exCT   uint32
	// noZone and noCT: the node has no such label at all.
	noZone, noCT bool

	// New nodes.
	pool    *poolT
	reqs    *reqSet
	zones   uint64
	cts     uint32
	types   bitset
	natural int // index into pool.types of the cheapest type that fits
	classes []*podClass

	ports    []hostPort // host ports in use
	requests resVec     // pods' requests (existing nodes: bound pods included)
	pods     []*corev1.Pod
	// podClasses is the relaxation step each of a new node's pods was
	// placed with.
	podClasses []*podClass
	hosts      []hostCount
	listed     bool // appended to its zone list
}

func (n *nodeState) taints() []corev1.Taint {
	if n.ex != nil {
		return n.exTaints
	}
	return n.pool.np.Taints
}

func (n *nodeState) hasClass(c *podClass) bool {
	for _, x := range n.classes {
		if x == c {
			return true
		}
	}
	return false
}

// reject says whether a failed check can change later (temporary) or not.
type verdict int8

const (
	fits verdict = iota
	rejectTemp
	rejectPerm
)

// trial is a planned node's state if the pod under test joins it.
type trial struct {
	reqs    *reqSet
	zones   uint64
	cts     uint32
	types   bitset
	natural int
}
