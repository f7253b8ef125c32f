package doctor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// unmanagedNodeLabels select nodes joiner never launches: an EKS managed
// node group's, or Fargate's.
var unmanagedNodeLabels = []string{"eks.amazonaws.com/nodegroup", "eks.amazonaws.com/compute-type"}

// keepsOffManagedNodes reports whether pods of spec can only run on nodes
// joiner does not manage: every term of their required node affinity
// excludes karpenter.sh/nodepool or requires a managed node group or
// Fargate label, or their nodeSelector requires one of those labels.
func keepsOffManagedNodes(spec *corev1.PodSpec) bool {
	for _, k := range unmanagedNodeLabels {
		if _, ok := spec.NodeSelector[k]; ok {
			return true
		}
	}
	a := spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms {
		if !termKeepsOff(term) {
			return false
		}
	}
	return true
}

func termKeepsOff(term corev1.NodeSelectorTerm) bool {
	for _, r := range term.MatchExpressions {
		if r.Key == v1.LabelNodePool && r.Operator == corev1.NodeSelectorOpDoesNotExist {
			return true
		}
		for _, k := range unmanagedNodeLabels {
			if r.Key == k && (r.Operator == corev1.NodeSelectorOpIn || r.Operator == corev1.NodeSelectorOpExists) {
				return true
			}
		}
	}
	return false
}

// checkControllerPlacement: joiner's own pods must not run on nodes it
// manages. Consolidating or expiring such a node evicts the controller
// mid-drain, and with no other capacity nothing is left to launch a node
// for it.
func checkControllerPlacement(in *Inputs) []Finding {
	var out []Finding
	const fix = "add a required nodeAffinity term 'karpenter.sh/nodepool DoesNotExist' (or a nodeSelector on an EKS managed node group or Fargate) to joiner's Deployment"
	if len(in.Controllers) == 0 {
		return []Finding{{Check: "controller-placement", Severity: Warning, Object: "deployment/joiner",
			Message: "no joiner Deployment matched the controller selector, so where its pods may run was not checked",
			Fix:     "pass --controller-selector with the labels of joiner's Deployment"}}
	}
	managed := map[string]bool{}
	for _, n := range in.Nodes {
		if _, ok := n.Labels[v1.LabelNodePool]; ok {
			managed[n.Name] = true
		}
	}
	for _, d := range in.Controllers {
		if !keepsOffManagedNodes(&d.Spec.Template.Spec) {
			out = append(out, Finding{Check: "controller-placement", Severity: Error, Object: objectName("Deployment", d.Namespace, d.Name),
				Message: "its pods may be scheduled onto nodes joiner manages (no required node affinity excludes karpenter.sh/nodepool), so joiner can disrupt the node it runs on",
				Fix:     fix})
		}
	}
	for _, p := range in.Pods {
		if p.Spec.NodeName == "" || !managed[p.Spec.NodeName] || !isController(in, &p) {
			continue
		}
		out = append(out, Finding{Check: "controller-placement", Severity: Error, Object: objectName("Pod", p.Namespace, p.Name),
			Message: fmt.Sprintf("joiner's pod runs on node %s, which joiner manages (it has label %s)", p.Spec.NodeName, v1.LabelNodePool),
			Fix:     fix + ", then restart the pod"})
	}
	return out
}

// isController reports whether p belongs to one of joiner's Deployments:
// same namespace and the Deployment's selector matches its labels.
func isController(in *Inputs, p *corev1.Pod) bool {
	for _, d := range in.Controllers {
		if d.Namespace != p.Namespace || d.Spec.Selector == nil {
			continue
		}
		match := true
		for k, v := range d.Spec.Selector.MatchLabels {
			if p.Labels[k] != v {
				match = false
			}
		}
		if match {
			return true
		}
	}
	return false
}
