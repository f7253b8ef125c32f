package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

// NodePoolStatus is what joiner observed about a NodePool.
type NodePoolStatus struct {
	// Resources is the total capacity of the NodePool's nodes (and
	// "nodes", their count).
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes the NodePool owns.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class last
	// seen; a change resets NodeRegistrationHealthy.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions describe whether the NodePool may launch nodes; see the
	// ConditionType* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePoolReadyDependents are the conditions NodePool Ready is rolled up
// from. NodeRegistrationHealthy is reported but does not gate readiness.
var NodePoolReadyDependents = []string{ConditionTypeValidationSucceeded, ConditionTypeNodeClassReady}

// GetConditions implements status.Object.
func (in *NodePool) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions implements status.Object.
func (in *NodePool) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// StatusConditions returns the NodePool's conditions with Ready rolled up
// from NodePoolReadyDependents.
func (in *NodePool) StatusConditions() status.ConditionSet {
	return status.For(in, ConditionTypeReady, NodePoolReadyDependents...)
}
