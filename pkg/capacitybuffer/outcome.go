package capacitybuffer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Outcome is how one plan treated a buffer's virtual pods.
type Outcome struct {
	// Existing are placed on nodes and NodeClaims that exist; New need
	// NodeClaims the plan launches; Failed fit nowhere.
	Existing, New, Failed int
	// Why is the first failed pod's reason, as describe gave it.
	Why string
}

// Outcomes counts, per buffer, where plan put its virtual pods; describe
// words a failed pod's reason. Buffers with no virtual pod in the plan are
// absent.
func Outcomes(plan *scheduling.Plan, describe func(scheduling.PodError) string) map[types.NamespacedName]*Outcome {
	out := map[types.NamespacedName]*Outcome{}
	get := func(k types.NamespacedName) *Outcome {
		if out[k] == nil {
			out[k] = &Outcome{}
		}
		return out[k]
	}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			if k, ok := BufferOf(p); ok {
				get(k).Existing++
			}
		}
	}
	for _, nc := range plan.NewNodeClaims {
		for _, p := range nc.Pods {
			if k, ok := BufferOf(p); ok {
				get(k).New++
			}
		}
	}
	for _, pe := range plan.Unschedulable {
		if k, ok := BufferOf(pe.Pod); ok {
			o := get(k)
			if o.Failed == 0 && describe != nil {
				o.Why = describe(pe)
			}
			o.Failed++
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
