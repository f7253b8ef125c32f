package v1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRequirementAdmits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      corev1.NodeSelectorOperator
		values  []string
		value   string
		present bool
		want    bool
	}{
		{name: "In, listed", op: corev1.NodeSelectorOpIn, values: []string{"a", "b"}, value: "b", present: true, want: true},
		{name: "In, not listed", op: corev1.NodeSelectorOpIn, values: []string{"a"}, value: "b", present: true},
		{name: "In, absent", op: corev1.NodeSelectorOpIn, values: []string{"a"}},
		{name: "NotIn, listed", op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, value: "a", present: true},
		{name: "NotIn, other", op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, value: "b", present: true, want: true},
		{name: "NotIn, absent", op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, want: true},
		{name: "Exists, present", op: corev1.NodeSelectorOpExists, value: "x", present: true, want: true},
		{name: "Exists, absent", op: corev1.NodeSelectorOpExists},
		{name: "DoesNotExist, present", op: corev1.NodeSelectorOpDoesNotExist, value: "x", present: true},
		{name: "DoesNotExist, absent", op: corev1.NodeSelectorOpDoesNotExist, want: true},
		{name: "Gt, above", op: corev1.NodeSelectorOpGt, values: []string{"4"}, value: "5", present: true, want: true},
		{name: "Gt, equal", op: corev1.NodeSelectorOpGt, values: []string{"4"}, value: "4", present: true},
		{name: "Gt, absent", op: corev1.NodeSelectorOpGt, values: []string{"4"}},
		{name: "Gt, not an integer", op: corev1.NodeSelectorOpGt, values: []string{"4"}, value: "large", present: true},
		{name: "Gt, bound not an integer", op: corev1.NodeSelectorOpGt, values: []string{"x"}, value: "5", present: true},
		{name: "Lt, below", op: corev1.NodeSelectorOpLt, values: []string{"4"}, value: "3", present: true, want: true},
		{name: "Lt, equal", op: corev1.NodeSelectorOpLt, values: []string{"4"}, value: "4", present: true},
		{name: "Gte, equal", op: NodeSelectorOpGte, values: []string{"4"}, value: "4", present: true, want: true},
		{name: "Gte, below", op: NodeSelectorOpGte, values: []string{"4"}, value: "3", present: true},
		{name: "Lte, equal", op: NodeSelectorOpLte, values: []string{"4"}, value: "4", present: true, want: true},
		{name: "Lte, above", op: NodeSelectorOpLte, values: []string{"4"}, value: "5", present: true},
		{name: "unknown operator", op: "Near", values: []string{"a"}, value: "a", present: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RequirementAdmits(tc.op, tc.values, tc.value, tc.present); got != tc.want {
				t.Errorf("RequirementAdmits(%s %v, %q, present=%v) = %v, want %v", tc.op, tc.values, tc.value, tc.present, got, tc.want)
			}
		})
	}
}

func TestRequirementAdmitsAny(t *testing.T) {
	for _, tc := range []struct {
		name       string
		op         corev1.NodeSelectorOperator
		values     []string
		candidates []string
		want       bool
	}{
		{name: "In, one candidate listed", op: corev1.NodeSelectorOpIn, values: []string{"b"}, candidates: []string{"a", "b"}, want: true},
		{name: "In, none listed", op: corev1.NodeSelectorOpIn, values: []string{"c"}, candidates: []string{"a", "b"}},
		{name: "NotIn, one candidate outside", op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, candidates: []string{"a", "b"}, want: true},
		{name: "NotIn, every candidate listed", op: corev1.NodeSelectorOpNotIn, values: []string{"a", "b"}, candidates: []string{"a", "b"}},
		{name: "NotIn, no label", op: corev1.NodeSelectorOpNotIn, values: []string{"a"}, want: true},
		{name: "Exists, no label", op: corev1.NodeSelectorOpExists},
		{name: "DoesNotExist, no label", op: corev1.NodeSelectorOpDoesNotExist, want: true},
		{name: "DoesNotExist, a label", op: corev1.NodeSelectorOpDoesNotExist, candidates: []string{"a"}},
		{name: "Gt, one candidate above", op: corev1.NodeSelectorOpGt, values: []string{"4"}, candidates: []string{"2", "8"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RequirementAdmitsAny(tc.op, tc.values, tc.candidates); got != tc.want {
				t.Errorf("RequirementAdmitsAny(%s %v, %v) = %v, want %v", tc.op, tc.values, tc.candidates, got, tc.want)
			}
		})
	}
}
