package nodepool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// FromNodePool is the solver's view of a NodePool: its template's labels,
// annotations, requirements, taints and node class, its limits and weight,
// and status.resources as the capacity already in use. It does not
// validate; see Validate.
func FromNodePool(np *v1.NodePool) *scheduling.NodePool {
	t := &np.Spec.Template
	out := &scheduling.NodePool{
		Name:          np.Name,
		Labels:        t.ObjectMeta.Labels,
		Annotations:   t.ObjectMeta.Annotations,
		Taints:        t.Spec.Taints,
		StartupTaints: t.Spec.StartupTaints,
		Limits:        corev1.ResourceList(np.Spec.Limits),
		InUse:         np.Status.Resources,
		Requirements:  make([]scheduling.Requirement, 0, len(t.Spec.Requirements)),
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	if ref := t.Spec.NodeClassRef; ref != nil {
		out.NodeClassRef = scheduling.NodeClassRef{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	for _, r := range t.Spec.Requirements {
		out.Requirements = append(out.Requirements, scheduling.Requirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues,
		})
	}
	return out
}

// Decode reads one karpenter.sh/v1 NodePool from JSON, strictly (unknown
// fields are errors), validates it and returns the solver's view of it.
// Errors name the field relative to the object, for example
// `spec.template.spec.requirements[1]: operator: unknown operator "Inn"`.
func Decode(data []byte) (*scheduling.NodePool, error) {
	np, err := DecodeAPI(data)
	if err != nil {
		return nil, err
	}
	return FromNodePool(np), nil
}

// DecodeAPI is Decode returning the API object itself, for callers that
// need more than the solver's view (disruption reads spec.disruption).
func DecodeAPI(data []byte) (*v1.NodePool, error) {
	np := &v1.NodePool{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(np); err != nil {
		return nil, err
	}
	if np.Kind != "" && np.Kind != "NodePool" {
		return nil, fmt.Errorf("kind: want NodePool, got %q", np.Kind)
	}
	if np.APIVersion != "" && np.APIVersion != v1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("apiVersion: want %s, got %q", v1.SchemeGroupVersion, np.APIVersion)
	}
	if err := Validate(np); err != nil {
		return nil, err
	}
	return np, nil
}

// Validate checks what the solver relies on, then the API's own runtime
// validation (label and requirement restrictions, budgets). A missing
// nodeClassRef is allowed, so hand-written NodePools can be simulated.
func Validate(np *v1.NodePool) error {
	if np.Name == "" {
		return fmt.Errorf("metadata.name: must be set")
	}
	if w := np.Spec.Weight; w != nil && (*w < 1 || *w > 100) {
		return fmt.Errorf("spec.weight: must be between 1 and 100, got %d", *w)
	}
	spec := &np.Spec.Template.Spec
	for i, r := range spec.Requirements {
		if err := ValidateRequirement(r.Key, r.Operator, r.Values, r.MinValues); err != nil {
			return fmt.Errorf("spec.template.spec.requirements[%d]: %w", i, err)
		}
	}
	for i, t := range spec.Taints {
		if err := validateTaint(t); err != nil {
			return fmt.Errorf("spec.template.spec.taints[%d]: %w", i, err)
		}
	}
	for i, t := range spec.StartupTaints {
		if err := validateTaint(t); err != nil {
			return fmt.Errorf("spec.template.spec.startupTaints[%d]: %w", i, err)
		}
	}
	for name, q := range np.Spec.Limits {
		if q.Sign() < 0 {
			return fmt.Errorf("spec.limits.%s: must be >= 0, got %s", name, q.String())
		}
	}
	for _, e := range np.RuntimeValidate() {
		if e.Type == field.ErrorTypeRequired && e.Field == "spec.template.spec.nodeClassRef" {
			continue
		}
		return e
	}
	return nil
}

// ValidateRequirement checks one requirement the way Karpenter's API does:
// a known operator, values where the operator needs them, a single integer
// for Gt/Lt/Gte/Lte, and minValues within what In can satisfy. Errors name
// the field (key, operator, values, minValues).
func ValidateRequirement(key string, op corev1.NodeSelectorOperator, values []string, minValues *int) error {
	if key == "" {
		return fmt.Errorf("key: must be set")
	}
	switch op {
	case corev1.NodeSelectorOpIn:
		if len(values) == 0 {
			return fmt.Errorf("values: operator In needs at least one value")
		}
	case corev1.NodeSelectorOpNotIn:
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(values) != 0 {
			return fmt.Errorf("values: operator %s takes no values, got %d", op, len(values))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, scheduling.OpGte, scheduling.OpLte:
		if len(values) != 1 {
			return fmt.Errorf("values: operator %s needs exactly one integer value, got %d values", op, len(values))
		}
		if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
			return fmt.Errorf("values[0]: operator %s needs an integer, got %q", op, values[0])
		}
	case "":
		return fmt.Errorf("operator: must be set")
	default:
		return fmt.Errorf("operator: unknown operator %q (want In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte)", op)
	}
	if minValues != nil {
		if *minValues < 1 || *minValues > 50 {
			return fmt.Errorf("minValues: must be between 1 and 50, got %d", *minValues)
		}
		if op == corev1.NodeSelectorOpIn && len(values) < *minValues {
			return fmt.Errorf("minValues: %d exceeds the %d values of operator In", *minValues, len(values))
		}
	}
	return nil
}

func validateTaint(t corev1.Taint) error {
	if t.Key == "" {
		return fmt.Errorf("key: must be set")
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case "":
		return fmt.Errorf("effect: must be set")
	default:
		return fmt.Errorf("effect: unknown effect %q (want NoSchedule, PreferNoSchedule or NoExecute)", t.Effect)
	}
}
