package cloudprovider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RepairPolicy says when a node is unhealthy: its condition ConditionType
// has had ConditionStatus for at least TolerationDuration. With the
// NodeRepair feature gate, joiner then deletes the node's NodeClaim so it
// is replaced.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}

// RepairPolicyProvider is implemented by cloud providers that declare the
// node conditions worth repairing (Karpenter's CloudProvider.RepairPolicies).
// It is a separate interface so providers that do not repair need not say
// so; a provider without it gets no repair.
type RepairPolicyProvider interface {
	// RepairPolicies returns the policies; nil means no repair.
	RepairPolicies() []RepairPolicy
}

// RepairPoliciesOf returns cp's repair policies, or nil when it declares
// none.
func RepairPoliciesOf(cp CloudProvider) []RepairPolicy {
	if r, ok := cp.(RepairPolicyProvider); ok {
		return r.RepairPolicies()
	}
	return nil
}

// RepairPolicies forwards to the wrapped provider.
func (i *instrumented) RepairPolicies() []RepairPolicy { return RepairPoliciesOf(i.next) }
