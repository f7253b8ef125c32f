package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestModelSharesTheCachesObjects: the model holds the informer cache's
// Nodes, NodeClaims and pods, not deep copies of them (at 10,000 pods the
// pod copies alone were about 40 MiB of joiner's heap): what the model
// shows has the very slices of the cache's object. Nodes still hands out
// copies the caller may change without reaching the model or the cache.
func TestModelSharesTheCachesObjects(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	providerID := "sim:///a/" + test.Name(t, "i")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node")},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}},
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: "sharing"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
		},
	}
	pod := requestingPod(ns, "shared", node.Name, "500m")
	env.Create(t, node, nc, pod)
	nc.Status.ProviderID = providerID
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	cluster, mgr := startClusterManager(t)

	// joined finds the StateNode of node and nc once the model joined them
	// and holds the pod.
	joined := func(nodes []*state.StateNode) (*state.StateNode, error) {
		for _, sn := range nodes {
			if sn.Name() == node.Name && sn.NodeClaim != nil && len(sn.Pods) == 1 {
				return sn, nil
			}
		}
		return nil, fmt.Errorf("node %s, its NodeClaim and its pod not joined in the model yet", node.Name)
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		// same reports whether the model's object has the cached one's
		// slice (not a copy of it).
		same func(sn *state.StateNode, cached client.Object) bool
	}{
		{"pod", &corev1.Pod{}, func(sn *state.StateNode, cached client.Object) bool {
			return &sn.Pods[0].Spec.Containers[0] == &cached.(*corev1.Pod).Spec.Containers[0]
		}},
		{"node", &corev1.Node{}, func(sn *state.StateNode, cached client.Object) bool {
			return &sn.Node.Spec.Taints[0] == &cached.(*corev1.Node).Spec.Taints[0]
		}},
		{"nodeclaim", &v1.NodeClaim{}, func(sn *state.StateNode, cached client.Object) bool {
			return &sn.NodeClaim.Spec.Requirements[0] == &cached.(*v1.NodeClaim).Spec.Requirements[0]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := map[string]client.Object{"pod": pod, "node": node, "nodeclaim": nc}[tc.name]
			test.Eventually(t, 0, func(ctx context.Context) error {
				sn, err := joined(cluster.ReadOnlyNodes())
				if err != nil {
					return err
				}
				cached := tc.obj.DeepCopyObject().(client.Object)
				if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(key), cached, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
					return err
				}
				modelled := map[string]client.Object{"pod": sn.Pods[0], "node": sn.Node, "nodeclaim": sn.NodeClaim}[tc.name]
				if modelled.GetResourceVersion() != cached.GetResourceVersion() {
					return fmt.Errorf("model at resourceVersion %s, cache at %s", modelled.GetResourceVersion(), cached.GetResourceVersion())
				}
				if !tc.same(sn, cached) {
					t.Fatalf("the model holds a copy of the %s, not the cache's", tc.name)
				}
				return nil
			})
		})
	}

	copied, err := joined(cluster.Nodes())
	if err != nil {
		t.Fatal(err)
	}
	copied.Pods[0].Spec.Containers[0].Name = "changed"
	copied.Node.Spec.Taints[0].Value = "changed"
	copied.NodeClaim.Spec.Requirements[0].Values[0] = "changed"
	sn, err := joined(cluster.ReadOnlyNodes())
	if err != nil {
		t.Fatal(err)
	}
	if sn.Pods[0].Spec.Containers[0].Name != "app" || sn.Node.Spec.Taints[0].Value != "a" || sn.NodeClaim.Spec.Requirements[0].Values[0] != "amd64" {
		t.Errorf("a change to Nodes' copies reached the model (and the cache)")
	}
}
