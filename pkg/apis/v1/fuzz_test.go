package v1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

var fuzzOperators = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist,
	corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte, "Near", "",
}

func fuzzValues(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitN(s, ",", 8)
}

// FuzzRequirement parses arbitrary requirements the way a NodePool or a
// NodeClaim carries them. Validation never panics and every error names a
// field under the requirement; RequirementAdmits never panics and, for
// the operators kube-scheduler knows, agrees with its node selector
// (k8s.io/component-helpers) on every selector kube-scheduler accepts, so a
// node joiner launches for a pod is one the pod's node affinity admits.
// Seeds: testdata/fuzz/FuzzRequirement.
func FuzzRequirement(f *testing.F) {
	f.Add("node.kubernetes.io/instance-type", uint8(0), "m5.large,m5.xlarge", int8(0), "m5.large", true, true)
	f.Add("karpenter.sh/capacity-type", uint8(0), "spot,reserved", int8(2), "spot", true, true)
	f.Add("karpenter.k8s.aws/instance-cpu", uint8(4), "4", int8(0), "8", true, true)
	f.Add("karpenter.k8s.aws/instance-cpu", uint8(7), "-3", int8(0), "-4", true, false)
	f.Add("team", uint8(1), "a,b", int8(1), "", false, false)
	f.Add("karpenter.sh/nodepool", uint8(2), "", int8(0), "x", true, true)
	f.Add("Bad Key", uint8(8), "x", int8(-1), "x", true, false)
	f.Add("kubernetes.io/arch", uint8(5), "007", int8(0), "6", true, true)
	f.Fuzz(func(t *testing.T, key string, opIndex uint8, values string, minValues int8, value string, present, nodePool bool) {
		op := fuzzOperators[int(opIndex)%len(fuzzOperators)]
		r := NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: fuzzValues(values)}
		if minValues != 0 {
			mv := int(minValues)
			r.MinValues = &mv
		}
		path := field.NewPath("spec", "requirements").Index(0)
		for _, e := range r.validate(path, nodePool) {
			if !strings.HasPrefix(e.Field, path.String()) || e.Error() == "" {
				t.Fatalf("error %q does not name a field of the requirement", e)
			}
		}
		got := RequirementAdmits(op, r.Values, value, present)
		if present && value != "" {
			any := RequirementAdmitsAny(op, r.Values, []string{value})
			if any != got {
				t.Fatalf("RequirementAdmitsAny(%q) = %v, RequirementAdmits = %v", value, any, got)
			}
		}
		switch op {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
			corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		default:
			return
		}
		sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: r.Values}},
		}}})
		if err != nil {
			return // kube-scheduler rejects the selector
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
		if present {
			node.Labels[key] = value
		}
		if want := sel.Match(node); got != want {
			t.Fatalf("%s %s %q on %s=%q (present %v): joiner admits %v, kube-scheduler %v", key, op, r.Values, key, value, present, got, want)
		}
	})
}
