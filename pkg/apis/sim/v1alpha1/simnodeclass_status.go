package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

// ConditionTypeReady is True once the simulated cloud has resolved the
// SimNodeClass's zones and catalog and can launch from it.
const ConditionTypeReady = status.ConditionReady

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

// StatusConditions returns the condition set whose root is Ready. A
// SimNodeClass has no dependent conditions: the simulated cloud sets Ready
// directly.
func (in *SimNodeClass) StatusConditions() status.ConditionSet {
	return status.For(in, ConditionTypeReady)
}

// IsReady reports whether the Ready condition is True.
func (in *SimNodeClass) IsReady() bool {
	return in.StatusConditions().IsTrue(ConditionTypeReady)
}
