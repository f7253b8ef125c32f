package doctor

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// probePod is the least demanding pod there is: it tolerates every taint
// and asks for nothing, so a NodePool that cannot launch a node for it can
// launch none at all.
func probePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "joiner-doctor-probe", Namespace: "default", UID: "joiner-doctor-probe"},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "probe"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}

// checkNodePoolInstanceTypes: a NodePool whose requirements no instance
// type meets (or whose NodeClass offers none) launches nothing, and every
// pod it was meant for stays pending. The solver itself judges, with a
// probe pod, so the reason is the one pods would get.
func checkNodePoolInstanceTypes(in *Inputs) []Finding {
	var out []Finding
	for i := range in.NodePools {
		np := &in.NodePools[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		obj := objectName("NodePool", "", np.Name)
		if err := in.InstanceTypeErrors[np.Name]; err != nil {
			out = append(out, Finding{Check: "nodepool-instance-types", Severity: Error, Object: obj,
				Message: fmt.Sprintf("listing its instance types failed: %v", err), Fix: "make its node class ready (kubectl describe it for the failing condition)"})
			continue
		}
		its, ok := in.InstanceTypes[np.Name]
		if !ok {
			continue
		}
		if len(its) == 0 {
			out = append(out, Finding{Check: "nodepool-instance-types", Severity: Error, Object: obj,
				Message: "its node class offers no instance types", Fix: "check the node class's subnets, images and status conditions"})
			continue
		}
		if err := nodepool.Validate(np); err != nil {
			out = append(out, Finding{Check: "nodepool-instance-types", Severity: Error, Object: obj,
				Message: fmt.Sprintf("it is invalid: %v", err), Fix: "correct the field named"})
			continue
		}
		snap := &scheduling.Snapshot{
			Now:           time.Unix(0, 0),
			NodePools:     []*scheduling.NodePool{nodepool.FromNodePool(np)},
			InstanceTypes: map[string][]*scheduling.InstanceType{np.Name: its},
			Pods:          []*corev1.Pod{probePod()},
			Namespaces:    []*corev1.Namespace{},
		}
		plan, err := scheduling.Solve(snap, scheduling.Options{})
		if err != nil {
			out = append(out, Finding{Check: "nodepool-instance-types", Severity: Error, Object: obj,
				Message: fmt.Sprintf("the solver failed on it: %v", err), Fix: "report this as a joiner bug"})
			continue
		}
		if len(plan.Unschedulable) == 0 {
			continue
		}
		r := plan.Unschedulable[0].NodePools[np.Name]
		out = append(out, Finding{Check: "nodepool-instance-types", Severity: Error, Object: obj,
			Message: fmt.Sprintf("none of its node class's %d instance types meets its requirements (%s), so it can launch no node", len(its), scheduling.Message(r)),
			Fix:     "widen spec.template.spec.requirements (instance types, families, architectures, zones, capacity types) to what the node class offers"})
	}
	return out
}
