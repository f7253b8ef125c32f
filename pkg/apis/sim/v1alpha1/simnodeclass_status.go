package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionTypeReady is True once the simulated cloud has resolved the
// SimNodeClass's zones and catalog and can launch from it.
const ConditionTypeReady = "Ready"

// SimNodeClassStatus is what the simulated cloud resolved.
type SimNodeClassStatus struct {
	// Zones are the zones launches may use: spec.zones in order.
	//
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Conditions report readiness.
	//
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GetConditions returns the status conditions.
func (in *SimNodeClass) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the status conditions.
func (in *SimNodeClass) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// StatusConditionTypes are the conditions whose conjunction is Ready.
func (in *SimNodeClass) StatusConditionTypes() []string {
	return nil
}

// IsReady reports whether the Ready condition is True.
func (in *SimNodeClass) IsReady() bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, ConditionTypeReady)
}
