package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// schedulingNodePool is the solver's view of np, with inUse counted against
// its limits.
func schedulingNodePool(np *v1.NodePool, inUse corev1.ResourceList) *scheduling.NodePool {
	tmpl := np.Spec.Template
	out := &scheduling.NodePool{
		Name:          np.Name,
		Labels:        tmpl.ObjectMeta.Labels,
		Annotations:   tmpl.ObjectMeta.Annotations,
		Taints:        tmpl.Spec.Taints,
		StartupTaints: tmpl.Spec.StartupTaints,
		Limits:        corev1.ResourceList(np.Spec.Limits),
		InUse:         inUse,
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	for _, r := range tmpl.Spec.Requirements {
		out.Requirements = append(out.Requirements, scheduling.Requirement{
			Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues,
		})
	}
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		out.NodeClassRef = scheduling.NodeClassRef{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	return out
}
