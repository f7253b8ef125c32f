package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

// NodeClaimReadyDependents are the conditions NodeClaim Ready is rolled up
// from.
var NodeClaimReadyDependents = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// GetConditions implements status.Object.
func (in *NodeClaim) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions implements status.Object.
func (in *NodeClaim) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// StatusConditions returns the NodeClaim's conditions with Ready rolled up
// from NodeClaimReadyDependents.
func (in *NodeClaim) StatusConditions() status.ConditionSet {
	return status.For(in, ConditionTypeReady, NodeClaimReadyDependents...)
}
