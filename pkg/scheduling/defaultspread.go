package scheduling

import (
	"maps"
	"slices"

	"github.com/joiner-dev/joiner/pkg/pods"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultSpread is kube-scheduler's PodTopologySpread plugin defaulting: a
// pod that declares no topology spread constraints gets its scheduler
// profile's default constraints, with a selector kube-scheduler deduces
// from the Services that select the pod and the pod's controller. This is
// the one place joiner applies them; the solver plans every pending pod
// with the constraints For returns.
type DefaultSpread struct {
	// Constraints are the defaults by scheduler name (schedulerconfig);
	// the "" key holds defaults for every scheduler name not listed.
	Constraints map[string][]corev1.TopologySpreadConstraint
	// Services are the Services of the pending pods' namespaces.
	Services []*corev1.Service
	// Owners are the selectors of the controllers kube-scheduler deduces
	// from (ReplicationControllers, ReplicaSets, StatefulSets), by UID.
	Owners map[types.UID]OwnerSelector
}

// OwnerSelector is what a pod's controller adds to the deduced selector.
type OwnerSelector struct {
	// MatchLabels is a ReplicationController's selector, merged into the
	// Services' labels.
	MatchLabels map[string]string
	// Selector is a ReplicaSet's or StatefulSet's, whose requirements are
	// added.
	Selector *metav1.LabelSelector
}

// For returns the topology spread constraints kube-scheduler applies to p:
// its own when it has any; else its scheduler's defaults, each with the
// deduced selector; none when there are no defaults or no selector can be
// deduced (kube-scheduler then applies none either). It never changes p.
func (d *DefaultSpread) For(p *corev1.Pod) []corev1.TopologySpreadConstraint {
	if len(p.Spec.TopologySpreadConstraints) > 0 || d == nil {
		return p.Spec.TopologySpreadConstraints
	}
	name := p.Spec.SchedulerName
	if name == "" {
		name = corev1.DefaultSchedulerName
	}
	defaults, ok := d.Constraints[name]
	if !ok {
		defaults = d.Constraints[""]
	}
	if len(defaults) == 0 {
		return nil
	}
	sel := d.selector(p)
	if sel == nil {
		return nil
	}
	out := make([]corev1.TopologySpreadConstraint, len(defaults))
	for i := range defaults {
		out[i] = *defaults[i].DeepCopy()
		out[i].LabelSelector = sel
	}
	return out
}

// selector is kube-scheduler's deduced default selector for p: the
// selectors of the Services of its namespace that select it, merged, then
// its controller's; nil when that is empty (an empty selector would count
// every pod of the namespace).
func (d *DefaultSpread) selector(p *corev1.Pod) *metav1.LabelSelector {
	matchLabels := map[string]string{}
	for _, svc := range d.Services {
		if svc.Namespace != p.Namespace || svc.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)) {
			maps.Copy(matchLabels, svc.Spec.Selector)
		}
	}
	var exprs []metav1.LabelSelectorRequirement
	if owner := pods.ControllerOf(p); owner != nil {
		if o, ok := d.Owners[owner.UID]; ok {
			maps.Copy(matchLabels, o.MatchLabels)
			if o.Selector != nil {
				for _, k := range slices.Sorted(maps.Keys(o.Selector.MatchLabels)) {
					exprs = append(exprs, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{o.Selector.MatchLabels[k]}})
				}
				exprs = append(exprs, o.Selector.MatchExpressions...)
			}
		}
	}
	if len(matchLabels) == 0 && len(exprs) == 0 {
		return nil
	}
	if len(matchLabels) == 0 {
		matchLabels = nil
	}
	return &metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: exprs}
}
