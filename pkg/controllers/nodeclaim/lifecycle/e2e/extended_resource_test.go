package e2e

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestExtendedResourceWait: a NodeClaim that requests nvidia.com/gpu is not
// initialized until its Node advertises the GPU in allocatable (the device
// plugin has registered). The instance never registers by itself; the test
// plays its kubelet so it controls the Node's status.
func TestExtendedResourceWait(t *testing.T) {
	h := start(t, options{faults: &simv1alpha1.Faults{NeverRegister: true}})
	nc := h.nodeClaim(t)
	nc.Spec.StartupTaints = nil
	nc.Spec.Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	h.create(t, nc)
	launched := h.condition(t, nc.Name, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "gpu-node"), Labels: map[string]string{v1.LabelArch: "amd64"}},
		Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
	}
	test.Env(t).Create(t, node)
	h.updateNodeStatus(t, node.Name, func(n *corev1.Node) {
		n.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
	})
	got := h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionUnknown, lifecycle.ReasonResourceNotRegistered)
	for _, c := range got.Status.Conditions {
		if c.Type == v1.ConditionTypeInitialized {
			requireMentions(t, c.Message, "nvidia.com/gpu")
		}
	}

	h.updateNodeStatus(t, node.Name, func(n *corev1.Node) {
		n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
		n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
	})
	h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
}
