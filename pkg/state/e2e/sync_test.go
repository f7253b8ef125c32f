package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestStateSyncsAndJoinsNodeClaimsToNodes: a Cluster started against an API
// server that already holds a launched NodeClaim and its Node reports
// synced only once it tracks both, joined by provider ID; later changes
// (a new in-flight NodeClaim) flow in.
func TestStateSyncsAndJoinsNodeClaimsToNodes(t *testing.T) {
	env := test.Env(t)
	providerID := "sim:///zone-a/" + test.Name(t, "i")
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc"), Labels: map[string]string{v1.LabelNodePool: "sync-pool"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
		},
	}
	env.Create(t, nc)
	nc.Status.ProviderID = providerID
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node")}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	env.Create(t, node)

	cluster := startCluster(t)
	test.Eventually(t, 0, func(ctx context.Context) error {
		if !cluster.Synced(ctx) {
			return errors.New("cluster state not synced")
		}
		return nil
	})
	sn, ok := cluster.NodeByName(node.Name)
	if !ok || sn.NodeClaim == nil || sn.NodeClaim.Name != nc.Name || sn.NodePool() != "sync-pool" {
		t.Fatalf("the Node and its NodeClaim are one StateNode: %+v", sn)
	}
	if got := cluster.NodePoolUsage()["sync-pool"][v1.ResourceNodes]; got.Value() != 1 {
		t.Errorf("sync-pool counts 1 node, got %s", got.String())
	}

	inflight := nc.DeepCopy()
	inflight.ObjectMeta = metav1.ObjectMeta{Name: test.Name(t, "inflight"), Labels: nc.Labels}
	inflight.Status = v1.NodeClaimStatus{}
	env.Create(t, inflight)
	test.Eventually(t, 0, func(ctx context.Context) error {
		if _, ok := cluster.NodeByName(inflight.Name); !ok {
			return fmt.Errorf("in-flight nodeclaim %s not tracked", inflight.Name)
		}
		if !cluster.Synced(ctx) {
			return errors.New("not synced")
		}
		return nil
	})
}
