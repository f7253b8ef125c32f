package scheduling_test

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// planText renders a plan canonically: what golden files hold and what the
// determinism check compares.
func planText(p *scheduling.Plan) string {
	var b strings.Builder
	for _, e := range p.Existing {
		fmt.Fprintf(&b, "existing %s:", e.Node)
		for _, pod := range e.Pods {
			fmt.Fprintf(&b, " %s/%s", pod.Namespace, pod.Name)
		}
		b.WriteByte('\n')
	}
	for i, n := range p.NewNodeClaims {
		fmt.Fprintf(&b, "new %d nodepool=%s price=%.4f\n", i, n.NodePool, n.Price)
		for _, r := range n.Requirements {
			fmt.Fprintf(&b, "  req %s %s %v", r.Key, r.Operator, r.Values)
			if r.MinValues != nil {
				fmt.Fprintf(&b, " minValues=%d", *r.MinValues)
			}
			b.WriteByte('\n')
		}
		var names []string
		for _, it := range n.InstanceTypes {
			names = append(names, it.Name)
		}
		fmt.Fprintf(&b, "  types %s\n", strings.Join(names, " "))
		keys := make([]string, 0, len(n.Requests))
		for k := range n.Requests {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		b.WriteString("  requests")
		for _, k := range keys {
			q := n.Requests[corev1.ResourceName(k)]
			fmt.Fprintf(&b, " %s=%s", k, q.String())
		}
		b.WriteByte('\n')
		b.WriteString("  pods")
		for _, pod := range n.Pods {
			fmt.Fprintf(&b, " %s/%s", pod.Namespace, pod.Name)
		}
		b.WriteByte('\n')
	}
	for _, u := range p.Unschedulable {
		fmt.Fprintf(&b, "unschedulable %s/%s\n", u.Pod.Namespace, u.Pod.Name)
		if u.Existing != nil {
			fmt.Fprintf(&b, "  %s: %s\n", existingNodes, scheduling.Message(u.Existing))
		}
		keys := make([]string, 0, len(u.NodePools))
		for k := range u.NodePools {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %s: %s\n", k, scheduling.Message(u.NodePools[k]))
		}
	}
	return b.String()
}

// existingNodes stands for the existing capacity where a test names a
// NodePool whose reason it reads.
const existingNodes = "(existing nodes)"

// reasonText renders the pod's reason for pool (or existingNodes).
func reasonText(pe scheduling.PodError, pool string) string {
	if pool == existingNodes {
		return scheduling.Message(pe.Existing)
	}
	return scheduling.Message(pe.NodePools[pool])
}
