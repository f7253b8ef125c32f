package state

import "testing"

func TestNodeClaimAndNodeJoinByProviderID(t *testing.T) {
	c, _, _ := newTestCluster(t)

	c.UpdateNodeClaim(nodeClaim("default-abc", "default", ""))
	nodes := c.Nodes()
	if len(nodes) != 1 || nodes[0].Name() != "default-abc" || nodes[0].Launched() || nodes[0].Registered() {
		t.Fatalf("before launch: want one unlaunched NodeClaim named default-abc, got %+v", nodes)
	}
	if got := nodes[0].Labels()["topology.kubernetes.io/zone"]; got != "zone-a" {
		t.Errorf("an in-flight NodeClaim carries its single-valued requirements as labels: zone = %q", got)
	}
	if _, ok := nodes[0].Labels()["node.kubernetes.io/instance-type"]; ok {
		t.Errorf("a multi-valued requirement must not become a label")
	}

	c.UpdateNodeClaim(launched(nodeClaim("default-abc", "default", "sim:///zone-a/i-1"), "4", "16Gi"))
	nodes = c.Nodes()
	if len(nodes) != 1 || nodes[0].ProviderID() != "sim:///zone-a/i-1" {
		t.Fatalf("after launch: want one NodeClaim keyed by provider ID, got %d nodes", len(nodes))
	}

	c.UpdateNode(node("ip-10-0-0-1", "sim:///zone-a/i-1", map[string]string{"kubernetes.io/arch": "arm64"}))
	nodes = c.Nodes()
	if len(nodes) != 1 {
		t.Fatalf("after registration: Node and NodeClaim must join into one StateNode, got %d", len(nodes))
	}
	sn := nodes[0]
	if sn.Name() != "ip-10-0-0-1" || sn.NodeClaim == nil || sn.Node == nil || sn.NodePool() != "default" {
		t.Fatalf("joined node: name=%q nodeclaim=%v node=%v pool=%q", sn.Name(), sn.NodeClaim != nil, sn.Node != nil, sn.NodePool())
	}
	if got := sn.Labels()["kubernetes.io/arch"]; got != "arm64" {
		t.Errorf("a registered node's own labels win: arch = %q", got)
	}
	if got := cpu(sn.Allocatable()); got != "3800m" {
		t.Errorf("a registered node's allocatable comes from the Node: %s", got)
	}
	if byName, ok := c.NodeByName("ip-10-0-0-1"); !ok || byName.ProviderID() != "sim:///zone-a/i-1" {
		t.Errorf("NodeByName(node) did not find the joined node")
	}
	if _, ok := c.NodeByProviderID("sim:///zone-a/i-1"); !ok {
		t.Errorf("NodeByProviderID did not find the joined node")
	}

	c.DeleteNode("ip-10-0-0-1")
	nodes = c.Nodes()
	if len(nodes) != 1 || nodes[0].Node != nil || nodes[0].NodeClaim == nil {
		t.Fatalf("after the Node is deleted the NodeClaim stays, alone")
	}
	c.DeleteNodeClaim("default-abc")
	if n := len(c.Nodes()); n != 0 {
		t.Fatalf("after both are deleted nothing is tracked, got %d", n)
	}
}

func TestUnmanagedNodeIsTrackedByName(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNode(node("static-1", "", nil))
	sn, ok := c.NodeByName("static-1")
	if !ok || sn.Managed() || !sn.Initialized() || sn.NodePool() != "" {
		t.Fatalf("an unmanaged Ready node is tracked, unmanaged and initialized: %+v", sn)
	}
	n := node("static-1", "aws:///zone-a/i-9", nil)
	c.UpdateNode(n)
	if got := len(c.Nodes()); got != 1 {
		t.Fatalf("a node that gains a provider ID is re-keyed, not duplicated: %d nodes", got)
	}
}
