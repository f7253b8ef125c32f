package lifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
)

// registered launches nc and registers node for it.
func (u *unit) registered(nc *v1.NodeClaim, node func(providerID string) *corev1.Node) (*v1.NodeClaim, *corev1.Node) {
	u.t.Helper()
	nc = u.launch(nc)
	n := node(nc.Status.ProviderID)
	u.create(n)
	u.reconcile(nc.Name)
	nc = u.nodeClaim(nc.Name)
	requireCondition(u.t, nc, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	return nc, u.node(n.Name)
}

func (u *unit) update(obj *corev1.Node) {
	u.t.Helper()
	withStatus := obj.DeepCopy()
	if err := u.kube.Update(u.ctx, obj); err != nil {
		u.t.Fatal(err)
	}
	withStatus.ResourceVersion = obj.ResourceVersion
	if err := u.kube.Status().Update(u.ctx, withStatus); err != nil {
		u.t.Fatal(err)
	}
}

func TestInitializationWaitsForStartupTaints(t *testing.T) {
	u := newUnit(t)
	nc, node := u.registered(testNodeClaim("init-startup"), func(id string) *corev1.Node {
		return registeringNode("node-init-startup", id, "amd64", agentTaint)
	})
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonStartupTaintsExist)
	contains(t, c.Message, "example.com/agent-not-ready")

	node.Spec.Taints = removeTaintKey(node.Spec.Taints, agentTaint.Key)
	u.update(node)
	u.reconcile("init-startup")
	nc = u.nodeClaim("init-startup")
	requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
	requireCondition(t, nc, v1.ConditionTypeReady, metav1.ConditionTrue, "")
	if u.node("node-init-startup").Labels[v1.LabelNodeInitialized] != "true" {
		t.Errorf("the Node is labelled initialized")
	}
}

func TestInitializationWaitsForNodeReady(t *testing.T) {
	u := newUnit(t)
	nc := testNodeClaim("init-notready")
	nc.Spec.StartupTaints = nil
	nc, node := u.registered(nc, func(id string) *corev1.Node {
		n := registeringNode("node-notready", id, "amd64")
		n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime network not ready"}
		return n
	})
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonNodeNotReady)
	contains(t, c.Message, "network not ready")
	node.Status.Conditions[0].Status = corev1.ConditionTrue
	u.update(node)
	u.reconcile("init-notready")
	requireCondition(t, u.nodeClaim("init-notready"), v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
}

func TestInitializationWaitsForRequestedExtendedResources(t *testing.T) {
	u := newUnit(t)
	nc := testNodeClaim("init-gpu")
	nc.Spec.StartupTaints = nil
	nc.Spec.Requirements[1].Values = []string{"fake.gpu"}
	nc.Spec.Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	nc, node := u.registered(nc, func(id string) *corev1.Node { return registeringNode("node-gpu", id, "amd64") })
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonResourceNotRegistered)
	contains(t, c.Message, "nvidia.com/gpu", "device plugin")
	contains(t, u.event(events.ExtendedResourceMissing).Message, "nvidia.com/gpu", "device plugin")
	published := len(u.events.Events())

	node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
	u.update(node)
	u.reconcile("init-gpu")
	requireCondition(t, u.nodeClaim("init-gpu"), v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonResourceNotRegistered)
	if got := len(u.events.Events()); got != published {
		t.Fatalf("%d more events while still waiting for the same resource (%v); ExtendedResourceMissing is said once", got-published, u.events.Reasons())
	}

	node = u.node("node-gpu")
	node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	u.update(node)
	u.reconcile("init-gpu")
	requireCondition(t, u.nodeClaim("init-gpu"), v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
}

func TestInitializationReportsTheWrongArchitecture(t *testing.T) {
	u := newUnit(t)
	nc, _ := u.registered(testNodeClaim("init-arch"), func(id string) *corev1.Node {
		return registeringNode("node-wrong-arch", id, "arm64")
	})
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionFalse, ReasonArchitectureMismatch)
	want := "node node-wrong-arch registered as arm64 but the NodeClaim requires amd64: check the AMI/image architecture"
	contains(t, c.Message, want)
	contains(t, u.event(events.ArchitectureMismatch).Message, want)
	requireCondition(t, nc, v1.ConditionTypeReady, metav1.ConditionFalse, ReasonArchitectureMismatch)
}

func TestInitializationExplainsTheLegacyTaint(t *testing.T) {
	u := newUnit(t)
	nc := testNodeClaim("init-legacy")
	nc.Spec.StartupTaints = nil
	nc, _ = u.registered(nc, func(id string) *corev1.Node {
		return registeringNode("node-init-legacy", id, "amd64", corev1.Taint{Key: v1.TaintKeyUninitializedLegacy, Effect: corev1.TaintEffectNoExecute})
	})
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonLegacyUninitializedTaint)
	contains(t, c.Message, "karpenter.sh/uninitialized", "--register-with-taints")
}

func TestInitializationWaitsForExtendedResourcesTheInstanceTypePromises(t *testing.T) {
	u := newUnit(t)
	nc := testNodeClaim("init-promised-gpu")
	nc.Spec.StartupTaints = nil
	nc.Spec.Requirements[1].Values = []string{"fake.gpu"}
	nc, node := u.registered(nc, func(id string) *corev1.Node { return registeringNode("node-promised-gpu", id, "amd64") })
	if _, requested := nc.Spec.Resources.Requests["nvidia.com/gpu"]; requested {
		t.Fatalf("fixture: the GPU must be promised by the instance type, not requested")
	}
	c := requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonResourceNotRegistered)
	contains(t, c.Message, "nvidia.com/gpu")

	node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	u.update(node)
	u.reconcile("init-promised-gpu")
	requireCondition(t, u.nodeClaim("init-promised-gpu"), v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
}

// TestReadyNodeIsInitializedWhenItRegisters: a Node that is Ready, with no
// startup taint and its resources advertised when it registers, is
// registered and initialised by one reconcile, with one Node patch (the
// initialized label rides on registration's) and one NodeClaim status
// patch; a Node that is not Ready yet is registered only.
func TestReadyNodeIsInitializedWhenItRegisters(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ready       corev1.ConditionStatus
		initialized bool
	}{
		{name: "ready", ready: corev1.ConditionTrue, initialized: true},
		{name: "not-ready", ready: corev1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodePatches, statusPatches int
			u := newUnitWith(t, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*corev1.Node); ok {
						nodePatches++
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if _, ok := obj.(*v1.NodeClaim); ok {
						statusPatches++
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
			nc := testNodeClaim("init-" + tc.name)
			nc.Spec.StartupTaints = nil
			nc = u.launch(nc)
			node := registeringNode("node-"+tc.name, nc.Status.ProviderID, "amd64")
			node.Status.Conditions[0].Status = tc.ready
			u.create(node)
			nodePatches, statusPatches = 0, 0

			u.reconcile(nc.Name)
			nc = u.nodeClaim(nc.Name)
			requireCondition(t, nc, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
			if nodePatches != 1 || statusPatches != 1 {
				t.Errorf("%d Node patches and %d NodeClaim status patches, want one each", nodePatches, statusPatches)
			}
			labelled := u.node(node.Name).Labels[v1.LabelNodeInitialized] == "true"
			if tc.initialized {
				requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
				if !labelled {
					t.Errorf("the Node is labelled initialized")
				}
				return
			}
			requireCondition(t, nc, v1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonNodeNotReady)
			if labelled {
				t.Errorf("a Node that is not Ready is not labelled initialized")
			}
		})
	}
}
