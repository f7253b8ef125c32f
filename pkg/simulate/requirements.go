package simulate

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

const labelCapacityType = "karpenter.sh/capacity-type"

// allows reports whether every requirement on key admits value.
func allows(reqs []scheduling.Requirement, key, value string) bool {
	for _, r := range reqs {
		if r.Key != key {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			return false
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, scheduling.OpGte, scheduling.OpLte:
			if len(r.Values) != 1 {
				return false
			}
			v, err1 := strconv.ParseInt(value, 10, 64)
			bound, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil {
				return false
			}
			ok := map[corev1.NodeSelectorOperator]bool{
				corev1.NodeSelectorOpGt: v > bound, corev1.NodeSelectorOpLt: v < bound,
				scheduling.OpGte: v >= bound, scheduling.OpLte: v <= bound,
			}[r.Operator]
			if !ok {
				return false
			}
		}
	}
	return true
}
