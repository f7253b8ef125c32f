package aws

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// RepairPolicies implements cloudprovider.RepairPolicyProvider with
// Karpenter's AWS policies: the kubelet's Ready condition False or Unknown
// for 30 minutes, and the EKS node monitoring agent's conditions False for
// 30 minutes (10 for AcceleratedHardwareReady, a GPU or Neuron fault).
// With the NodeRepair feature gate the node's NodeClaim is then deleted and
// replaced.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	policy := func(condition corev1.NodeConditionType, status corev1.ConditionStatus, d time.Duration) cloudprovider.RepairPolicy {
		return cloudprovider.RepairPolicy{ConditionType: condition, ConditionStatus: status, TolerationDuration: d}
	}
	return []cloudprovider.RepairPolicy{
		policy(corev1.NodeReady, corev1.ConditionFalse, 30*time.Minute),
		policy(corev1.NodeReady, corev1.ConditionUnknown, 30*time.Minute),
		policy("AcceleratedHardwareReady", corev1.ConditionFalse, 10*time.Minute),
		policy("StorageReady", corev1.ConditionFalse, 30*time.Minute),
		policy("NetworkingReady", corev1.ConditionFalse, 30*time.Minute),
		policy("KernelReady", corev1.ConditionFalse, 30*time.Minute),
		policy("ContainerRuntimeReady", corev1.ConditionFalse, 30*time.Minute),
	}
}
