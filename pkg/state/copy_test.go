package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAccessorsReturnCopies(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(launched(nodeClaim("nc-1", "default", "sim:///a/i-1"), "4", "16Gi"))
	n := node("node-1", "sim:///a/i-1", map[string]string{"team": "a"})
	c.UpdateNode(n)
	c.UpdatePod(pod("ns", "web", "node-1", "1"))

	// Mutating what was passed in does not reach the model.
	n.Labels["team"] = "mutated-input"

	sn, _ := c.NodeByName("node-1")
	sn.Node.Labels["team"] = "mutated-output"
	sn.NodeClaim.Status.Capacity["cpu"] = resource.MustParse("999")
	sn.Pods[0].Spec.NodeName = "elsewhere"
	sn.ExistingNode().Labels["team"] = "mutated-existing"

	again, _ := c.NodeByName("node-1")
	if got := again.Node.Labels["team"]; got != "a" {
		t.Errorf("node label leaked a mutation: %q", got)
	}
	if got := cpu(again.NodeClaim.Status.Capacity); got != "4" {
		t.Errorf("nodeclaim capacity leaked a mutation: %s", got)
	}
	if got := again.Pods[0].Spec.NodeName; got != "node-1" {
		t.Errorf("pod leaked a mutation: %q", got)
	}
}
