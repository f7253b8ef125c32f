package lowerbound

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// allows reports whether every requirement on key admits value. Keys the
// requirements do not mention are unconstrained.
func allows(reqs []scheduling.Requirement, key, value string) bool {
	for i := range reqs {
		if reqs[i].Key == key && !admits(&reqs[i], value, true) {
			return false
		}
	}
	return true
}

// admitsAll reports whether every requirement admits at least one of the
// label's values (a missing key or an empty list means the type has no value
// for it, which only the negative operators admit).
func admitsAll(reqs []scheduling.Requirement, labels map[string][]string) bool {
	for i := range reqs {
		r := &reqs[i]
		values, defined := labels[r.Key]
		if !defined || len(values) == 0 {
			// The type has no value for the key: only negative operators match.
			if !admits(r, "", false) {
				return false
			}
			continue
		}
		ok := false
		for _, v := range values {
			if admits(r, v, true) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// admits reports whether r admits value; present is false when the label is
// absent altogether.
func admits(r *scheduling.Requirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, scheduling.OpGte, scheduling.OpLte:
		if !present || len(r.Values) != 1 {
			return false
		}
		v, err1 := strconv.ParseInt(value, 10, 64)
		bound, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch r.Operator {
		case corev1.NodeSelectorOpGt:
			return v > bound
		case corev1.NodeSelectorOpLt:
			return v < bound
		case scheduling.OpGte:
			return v >= bound
		default:
			return v <= bound
		}
	}
	return false
}
