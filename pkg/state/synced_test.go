package state

import (
	"context"
	"testing"
)

func TestSyncedOnlyWhenEveryNodeAndNodeClaimIsTracked(t *testing.T) {
	ctx := context.Background()
	nc := launched(nodeClaim("nc-1", "default", "sim:///z/i-1"), "4", "16Gi")
	n := node("node-1", "sim:///z/i-1", nil)
	c, _, _ := newTestCluster(t, nc, n)

	if c.Synced(ctx) {
		t.Fatalf("an empty model is not synced with an API server holding objects")
	}
	c.UpdateNode(n)
	if c.Synced(ctx) {
		t.Fatalf("not synced while a NodeClaim is missing")
	}
	// The NodeClaim seen before launch (no provider ID) is not enough: the
	// API server's copy is launched.
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	if c.Synced(ctx) {
		t.Fatalf("not synced while the model holds a stale, unlaunched NodeClaim")
	}
	c.UpdateNodeClaim(nc)
	if !c.Synced(ctx) {
		t.Fatalf("synced once every Node and NodeClaim is tracked")
	}
}
