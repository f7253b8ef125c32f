package capacitybuffer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Outcome is how one plan treated a buffer's virtual pods.
type Outcome struct {
	// Existing are placed on nodes and NodeClaims that exist; New need
	// NodeClaims the plan launches; Failed fit nowhere.
	Existing int `json:"existing"`
	New      int `json:"new"`
	Failed   int `json:"failed"`
	// Why is the first failed pod's reason, as describe gave it.
	Why string `json:"why,omitempty"`
	// Short is, per NodePool, why the first failed pod fits none of its
	// nodes (scheduling.Message of the solver's reason: its limits, no
	// instance type that fits, ...).
	Short map[string]string `json:"short,omitempty"`
	// Places are where the placed chunks are, one per node or NodeClaim:
	// existing ones in the snapshot's node order, then the new ones.
	Places []Place `json:"places,omitempty"`
}

// Outcomes counts, per buffer, where plan put its virtual pods and names
// the places: snap is the snapshot plan was solved on (its nodes' NodePools
// and NodeClaims), launched the names of the NodeClaims created for
// plan.NewNodeClaims, index for index ("" or absent where none was: a
// simulation, a failed create). describe words a failed pod's reason.
// Buffers with no virtual pod in the plan are absent.
func Outcomes(snap *scheduling.Snapshot, plan *scheduling.Plan, launched []string, describe func(scheduling.PodError) string) map[types.NamespacedName]*Outcome {
	out := map[types.NamespacedName]*Outcome{}
	get := func(k types.NamespacedName) *Outcome {
		if out[k] == nil {
			out[k] = &Outcome{}
		}
		return out[k]
	}
	nodes := map[string]*scheduling.ExistingNode{}
	if snap != nil {
		for _, n := range snap.Nodes {
			nodes[n.Name] = n
		}
	}
	// hold counts the buffers' chunks among pods at place.
	hold := func(place Place, pods []*corev1.Pod) {
		for k, n := range countByBuffer(pods) {
			o := get(k)
			if place.New {
				o.New += n
			} else {
				o.Existing += n
			}
			place.Chunks = n
			o.Places = append(o.Places, place)
		}
	}
	for _, e := range plan.Existing {
		place := Place{Node: e.Node}
		if n := nodes[e.Node]; n != nil {
			place.NodePool, place.NodeClaim = n.NodePool, n.NodeClaim
		}
		hold(place, e.Pods)
	}
	for i, nc := range plan.NewNodeClaims {
		place := Place{NodePool: nc.NodePool, New: true, Index: i + 1}
		if i < len(launched) {
			place.NodeClaim = launched[i]
		}
		hold(place, nc.Pods)
	}
	for _, pe := range plan.Unschedulable {
		if k, ok := BufferOf(pe.Pod); ok {
			o := get(k)
			if o.Failed == 0 {
				if describe != nil {
					o.Why = describe(pe)
				}
				for pool, r := range pe.NodePools {
					if o.Short == nil {
						o.Short = map[string]string{}
					}
					o.Short[pool] = scheduling.Message(r)
				}
			}
			o.Failed++
		}
	}
	return out
}

// countByBuffer counts the virtual pods among pods, per buffer.
func countByBuffer(pods []*corev1.Pod) map[types.NamespacedName]int {
	var out map[types.NamespacedName]int
	for _, p := range pods {
		if k, ok := BufferOf(p); ok {
			if out == nil {
				out = map[types.NamespacedName]int{}
			}
			out[k]++
		}
	}
	return out
}

// Reasons of the buffer's Provisioning condition.
const (
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	ReasonRequiresNewCapacity  = "RequiresNewCapacity"
	ReasonUnschedulable        = "Unschedulable"
)

// Condition is the Provisioning condition o gives a buffer, the one
// wording the controller writes and joiner simulate shows: True
// (FitsExistingCapacity) when every chunk fits capacity that exists, False
// while some need new NodeClaims (RequiresNewCapacity) or fit nowhere
// (Unschedulable, with the solver's reason).
func (o *Outcome) Condition() (status metav1.ConditionStatus, reason, message string) {
	total := o.Existing + o.New + o.Failed
	switch {
	case o.Failed > 0:
		return metav1.ConditionFalse, ReasonUnschedulable, fmt.Sprintf("%d/%d chunk(s) fit no node and no NodePool: %s", o.Failed, total, o.Why)
	case o.New > 0:
		return metav1.ConditionFalse, ReasonRequiresNewCapacity, fmt.Sprintf("%d/%d chunk(s) need new capacity; joiner is launching it", o.New, total)
	}
	return metav1.ConditionTrue, ReasonFitsExistingCapacity, fmt.Sprintf("all %d chunk(s) fit existing capacity", total)
}
