package state

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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

// TestSyncedListsAtMostOncePerRecheckInterval: a positive result is reused
// until the recheck interval passes; a negative result never is.
func TestSyncedListsAtMostOncePerRecheckInterval(t *testing.T) {
	ctx := context.Background()
	nc := launched(nodeClaim("nc-1", "default", "sim:///z/i-1"), "4", "16Gi")
	n := node("node-1", "sim:///z/i-1", nil)
	_, clk, kube := newTestCluster(t, nc, n)
	lists := 0
	reader := interceptor.NewClient(kube.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists++
			return c.List(ctx, list, opts...)
		},
	})
	c, err := NewCluster(Options{Reader: reader, Clock: clk, SyncedRecheckInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	for range 3 {
		if c.Synced(ctx) {
			t.Fatalf("not synced while the model is empty")
		}
	}
	if lists == 0 {
		t.Fatalf("an unsynced model is checked against the API server on every call")
	}
	c.UpdateNode(n)
	c.UpdateNodeClaim(nc)
	lists = 0
	for range 100 {
		if !c.Synced(ctx) {
			t.Fatalf("synced once every Node and NodeClaim is tracked")
		}
		clk.Step(100 * time.Millisecond)
	}
	if lists != 2 {
		t.Fatalf("10 s of calls every 100 ms list Nodes and NodeClaims once: %d lists", lists)
	}
	clk.Step(time.Second)
	if !c.Synced(ctx) || lists != 4 {
		t.Fatalf("after the recheck interval Synced lists again: %d lists", lists)
	}
	// A re-check that finds the model behind reports unsynced at once.
	extra := launched(nodeClaim("nc-2", "default", "sim:///z/i-2"), "4", "16Gi")
	if err := kube.Create(ctx, extra); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	if c.Synced(ctx) {
		t.Fatalf("not synced while a NodeClaim the API server holds is missing")
	}
	if c.Synced(ctx) {
		t.Fatalf("a negative result is checked again, not reused as positive")
	}
}
