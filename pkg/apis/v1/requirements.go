package v1

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// RequirementAdmits reports whether a node satisfies the requirement
// "op values" on a label that it carries with value (present) or lacks
// (present false). It is the one reading of the operators, Karpenter's Gte
// and Lte included, for every package that checks a requirement against a
// label (the simulated and fake clouds, the lower bound, simulate);
// k8s.io/component-helpers' nodeaffinity knows only corev1's operators, so
// it cannot decide Gte and Lte. The solver compiles requirements into its
// own constraints, which a test holds to the same answers.
//
// Gt, Lt, Gte and Lte compare integers: a value or bound that is not one
// admits nothing, as kube-scheduler does for Gt and Lt.
func RequirementAdmits(op corev1.NodeSelectorOperator, values []string, value string, present bool) bool {
	switch op {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if !present || len(values) != 1 {
			return false
		}
		v, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		bound, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return false
		}
		switch op {
		case corev1.NodeSelectorOpGt:
			return v > bound
		case corev1.NodeSelectorOpLt:
			return v < bound
		case NodeSelectorOpGte:
			return v >= bound
		default:
			return v <= bound
		}
	}
	return false
}

// RequirementAdmitsAny reports whether a node that can carry any one of
// candidates (none: the node lacks the label) can satisfy "op values", such
// as an instance type whose label may take several values.
func RequirementAdmitsAny(op corev1.NodeSelectorOperator, values, candidates []string) bool {
	if len(candidates) == 0 {
		return RequirementAdmits(op, values, "", false)
	}
	return slices.ContainsFunc(candidates, func(v string) bool { return RequirementAdmits(op, values, v, true) })
}
