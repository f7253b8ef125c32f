package state

import (
	"testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestNodePoolUsageSumsCapacityAndCountsNodes(t *testing.T) {
	c, _, _ := newTestCluster(t)
	// Registered: the Node's capacity counts (4 cpu).
	c.UpdateNodeClaim(launched(nodeClaim("a-1", "a", "sim:///z/i-1"), "8", "32Gi"))
	c.UpdateNode(node("node-1", "sim:///z/i-1", nil))
	// Launched, not registered: the NodeClaim's capacity (2 cpu).
	c.UpdateNodeClaim(launched(nodeClaim("a-2", "a", "sim:///z/i-2"), "2", "4Gi"))
	// Not launched: its requests (1 cpu).
	c.UpdateNodeClaim(nodeClaim("a-3", "a", ""))
	// Another pool and an unmanaged node are not counted in "a".
	c.UpdateNodeClaim(launched(nodeClaim("b-1", "b", "sim:///z/i-3"), "2", "4Gi"))
	c.UpdateNode(node("static", "", nil))

	use := c.NodePoolUsage()
	a := use["a"]
	if got := cpu(a); got != "7" {
		t.Errorf("pool a cpu = %s, want 7 (4 + 2 + 1)", got)
	}
	if got := a[v1.ResourceNodes]; got.Value() != 3 {
		t.Errorf("pool a nodes = %s, want 3", got.String())
	}
	if got := use["b"][v1.ResourceNodes]; got.Value() != 1 {
		t.Errorf("pool b nodes = %s, want 1", got.String())
	}
	if _, ok := use[""]; ok {
		t.Errorf("unmanaged nodes belong to no pool")
	}
}
