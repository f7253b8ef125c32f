package state

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestNominationsCountOnTheirNodeClaimUntilTheyExpire(t *testing.T) {
	c, clk, _ := newTestCluster(t)
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	p := pod("ns", "web-1", "", "2")
	key := types.NamespacedName{Namespace: "ns", Name: "web-1"}

	c.Nominate(p, "nc-1")
	if target, ok := c.IsNominated(key); !ok || target != "nc-1" {
		t.Fatalf("IsNominated = %q, %v", target, ok)
	}
	sn, _ := c.NodeByName("nc-1")
	if len(sn.NominatedPods) != 1 || cpu(sn.PodRequests()) != "2" {
		t.Fatalf("a nominated pod counts on its NodeClaim: %d pods, requests %s", len(sn.NominatedPods), cpu(sn.PodRequests()))
	}
	if got := len(sn.ExistingNode().Pods); got != 1 {
		t.Fatalf("ExistingNode carries nominated pods: %d", got)
	}

	clk.Step(time.Minute)
	if _, ok := c.IsNominated(key); ok {
		t.Fatalf("the nomination must expire after its TTL")
	}
	if sn, _ := c.NodeByName("nc-1"); len(sn.NominatedPods) != 0 {
		t.Fatalf("an expired nomination no longer counts")
	}
}

func TestBindingOrDeletingEndsANomination(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	c.Nominate(pod("ns", "a", "", "1"), "nc-1")
	c.Nominate(pod("ns", "b", "", "1"), "nc-1")
	c.Nominate(pod("ns", "c", "", "1"), "nc-2")

	c.UpdatePod(pod("ns", "a", "node-1", "1"))
	if _, ok := c.IsNominated(types.NamespacedName{Namespace: "ns", Name: "a"}); ok {
		t.Errorf("a bound pod is no longer nominated")
	}
	c.DeletePod(types.NamespacedName{Namespace: "ns", Name: "b"})
	if _, ok := c.IsNominated(types.NamespacedName{Namespace: "ns", Name: "b"}); ok {
		t.Errorf("a deleted pod is no longer nominated")
	}
	c.DeleteNodeClaim("nc-2")
	if _, ok := c.IsNominated(types.NamespacedName{Namespace: "ns", Name: "c"}); ok {
		t.Errorf("deleting the NodeClaim ends nominations to it")
	}
	c.Nominate(pod("ns", "a", "", "1"), "nc-1")
	if _, ok := c.IsNominated(types.NamespacedName{Namespace: "ns", Name: "a"}); ok {
		t.Errorf("a pod already bound cannot be nominated")
	}
}
