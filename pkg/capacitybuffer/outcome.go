package capacitybuffer

import (
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
