package scheduling

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestConstraintAgreesWithRequirementAdmits holds the solver's compiled
// constraints to the one reading of the operators every other package
// uses: for every operator and a spread of labels, present or absent, both
// give the same answer.
func TestConstraintAgreesWithRequirementAdmits(t *testing.T) {
	reqs := []struct {
		op     corev1.NodeSelectorOperator
		values []string
	}{
		{corev1.NodeSelectorOpIn, []string{"4", "b"}},
		{corev1.NodeSelectorOpNotIn, []string{"4", "b"}},
		{corev1.NodeSelectorOpExists, nil},
		{corev1.NodeSelectorOpDoesNotExist, nil},
		{corev1.NodeSelectorOpGt, []string{"4"}},
		{corev1.NodeSelectorOpLt, []string{"4"}},
		{v1.NodeSelectorOpGte, []string{"4"}},
		{v1.NodeSelectorOpLte, []string{"4"}},
	}
	labels := []string{"3", "4", "5", "b", "c", "-7"}
	for _, r := range reqs {
		c, err := newConstraint(r.op, r.values)
		if err != nil {
			t.Fatalf("%s %v: %v", r.op, r.values, err)
		}
		t.Run(fmt.Sprintf("%s %v", r.op, r.values), func(t *testing.T) {
			if got, want := c.allowsAny(nil), v1.RequirementAdmits(r.op, r.values, "", false); got != want {
				t.Errorf("label absent: constraint %v, RequirementAdmits %v", got, want)
			}
			for _, l := range labels {
				if got, want := c.allows(l), v1.RequirementAdmits(r.op, r.values, l, true); got != want {
					t.Errorf("label %q: constraint %v, RequirementAdmits %v", l, got, want)
				}
			}
		})
	}
}
