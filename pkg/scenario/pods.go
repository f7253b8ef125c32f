package scenario

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/nodepool"
)

// validatePod checks the fields of a pod the solver reads, defaulting the
// namespace to "default". Errors name the field relative to the pod.
func validatePod(p *corev1.Pod) error {
	if p.Name == "" {
		return fmt.Errorf("metadata.name: must be set")
	}
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if len(p.Spec.Containers) == 0 {
		return fmt.Errorf("spec.containers: must list at least one container")
	}
	for _, group := range []struct {
		field      string
		containers []corev1.Container
	}{{"spec.containers", p.Spec.Containers}, {"spec.initContainers", p.Spec.InitContainers}} {
		for i, c := range group.containers {
			for _, rl := range []struct {
				field string
				list  corev1.ResourceList
			}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
				for _, name := range sortedResourceNames(rl.list) {
					if q := rl.list[name]; q.Sign() < 0 {
						return fmt.Errorf("%s[%d].resources.%s.%s: must be >= 0, got %s", group.field, i, rl.field, name, q.String())
					}
				}
			}
		}
	}
	for _, name := range sortedResourceNames(p.Spec.Overhead) {
		if q := p.Spec.Overhead[name]; q.Sign() < 0 {
			return fmt.Errorf("spec.overhead.%s: must be >= 0, got %s", name, q.String())
		}
	}
	for i, t := range p.Spec.Tolerations {
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if t.Value != "" {
				return fmt.Errorf("spec.tolerations[%d].value: must be empty with operator Exists", i)
			}
		default:
			return fmt.Errorf("spec.tolerations[%d].operator: unknown operator %q (want Equal or Exists)", i, t.Operator)
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			for i, term := range req.NodeSelectorTerms {
				for j, r := range term.MatchExpressions {
					if err := validateNodeSelector(r); err != nil {
						return fmt.Errorf("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d].matchExpressions[%d]: %w", i, j, err)
					}
				}
			}
		}
		for i, pref := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			for j, r := range pref.Preference.MatchExpressions {
				if err := validateNodeSelector(r); err != nil {
					return fmt.Errorf("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d].preference.matchExpressions[%d]: %w", i, j, err)
				}
			}
		}
	}
	for i, c := range p.Spec.TopologySpreadConstraints {
		switch {
		case c.TopologyKey == "":
			return fmt.Errorf("spec.topologySpreadConstraints[%d].topologyKey: must be set", i)
		case c.MaxSkew < 1:
			return fmt.Errorf("spec.topologySpreadConstraints[%d].maxSkew: must be >= 1, got %d", i, c.MaxSkew)
		case c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway:
			return fmt.Errorf("spec.topologySpreadConstraints[%d].whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, got %q", i, c.WhenUnsatisfiable)
		case c.MinDomains != nil && *c.MinDomains < 1:
			return fmt.Errorf("spec.topologySpreadConstraints[%d].minDomains: must be >= 1, got %d", i, *c.MinDomains)
		}
	}
	return nil
}

func validateNodeSelector(r corev1.NodeSelectorRequirement) error {
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		return nodepool.ValidateRequirement(r.Key, r.Operator, r.Values, nil)
	case "":
		return fmt.Errorf("operator: must be set")
	default:
		return fmt.Errorf("operator: unknown operator %q (want In, NotIn, Exists, DoesNotExist, Gt or Lt)", r.Operator)
	}
}

// podKey is a pod's namespace/name.
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
