package scenario

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// defaultSpread is kube-scheduler's default topology spread over the
// input (SCHEDULER_CONFIG): constraints by scheduler name, with the
// Services and controllers the selectors are deduced from, as the live
// model gathers them. A Deployment stands for the ReplicaSet that would
// own its pods, with the Deployment's selector; Jobs, like kube-scheduler's
// other unread kinds, contribute nothing. nil without constraints.
func (m *Manifests) defaultSpread(constraints map[string][]corev1.TopologySpreadConstraint) *scheduling.DefaultSpread {
	if constraints == nil {
		return nil
	}
	d := &scheduling.DefaultSpread{Constraints: constraints, Services: m.services, Owners: map[types.UID]scheduling.OwnerSelector{}}
	for _, w := range m.workloads {
		switch w.obj.kind {
		case "Deployment", "ReplicaSet", "StatefulSet":
			d.Owners[w.obj.meta.UID] = scheduling.OwnerSelector{Selector: w.obj.selector}
		}
	}
	return d
}
