package nodepool

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// object is the part of a karpenter.sh/v1 NodePool the solver reads. It
// stands in for pkg/apis/v1.NodePool until those types land on main.
type object struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Template struct {
			Metadata struct {
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"metadata"`
			Spec struct {
				Requirements  []requirement  `json:"requirements"`
				Taints        []corev1.Taint `json:"taints,omitempty"`
				StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
				NodeClassRef  *struct {
					Group string `json:"group"`
					Kind  string `json:"kind"`
					Name  string `json:"name"`
				} `json:"nodeClassRef"`
			} `json:"spec"`
		} `json:"template"`
		Limits corev1.ResourceList `json:"limits,omitempty"`
		Weight *int32              `json:"weight,omitempty"`
	} `json:"spec"`
	Status struct {
		Resources corev1.ResourceList `json:"resources,omitempty"`
	} `json:"status"`
}

type requirement struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

// Decode reads one karpenter.sh/v1 NodePool from JSON and returns the
// solver's view of it. Errors name the field, relative to the object
// (for example `spec.template.spec.requirements[1].operator: ...`).
func Decode(data []byte) (*scheduling.NodePool, error) {
	var o object
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, err
	}
	if o.Kind != "" && o.Kind != "NodePool" {
		return nil, fmt.Errorf("kind: want NodePool, got %q", o.Kind)
	}
	if o.APIVersion != "" && o.APIVersion != "karpenter.sh/v1" {
		return nil, fmt.Errorf("apiVersion: want karpenter.sh/v1, got %q", o.APIVersion)
	}
	if err := validate(&o); err != nil {
		return nil, err
	}
	return fromObject(&o), nil
}

func fromObject(o *object) *scheduling.NodePool {
	t := &o.Spec.Template
	np := &scheduling.NodePool{
		Name:          o.Metadata.Name,
		Labels:        t.Metadata.Labels,
		Annotations:   t.Metadata.Annotations,
		Taints:        t.Spec.Taints,
		StartupTaints: t.Spec.StartupTaints,
		Limits:        o.Spec.Limits,
		InUse:         o.Status.Resources,
	}
	if o.Spec.Weight != nil {
		np.Weight = *o.Spec.Weight
	}
	if ref := t.Spec.NodeClassRef; ref != nil {
		np.NodeClassRef = scheduling.NodeClassRef{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	np.Requirements = make([]scheduling.Requirement, 0, len(t.Spec.Requirements))
	for _, r := range t.Spec.Requirements {
		np.Requirements = append(np.Requirements, scheduling.Requirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues,
		})
	}
	return np
}

func validate(o *object) error {
	if o.Metadata.Name == "" {
		return fmt.Errorf("metadata.name: must be set")
	}
	if w := o.Spec.Weight; w != nil && (*w < 1 || *w > 100) {
		return fmt.Errorf("spec.weight: must be between 1 and 100, got %d", *w)
	}
	spec := &o.Spec.Template.Spec
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
	for name, q := range o.Spec.Limits {
		if q.Sign() < 0 {
			return fmt.Errorf("spec.limits.%s: must be >= 0, got %s", name, q.String())
		}
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
