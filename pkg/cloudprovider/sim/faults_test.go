package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// A ghost Create launches the instance and fails; the retry for the same
// NodeClaim UID finds it, so the ghost never becomes a second instance.
func TestGhostCreateIsFoundByTheRetry(t *testing.T) {
	e := newEnv(t, nodeClass("default"))
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Catalog: testCatalog, Clock: e.clock,
		CallFaults: CallFaults{Seed: 1, Ghost: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claim := newNodeClaim("nc", "default")
	claim.UID = "uid-ghost"
	if _, err := p.Create(ctx, claim); err == nil || !strings.Contains(err.Error(), "response was lost") {
		t.Fatalf("ghost Create returned %v, want the lost-response error", err)
	}
	clean := e.provider("c")
	list, err := clean.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("after a ghost Create the cloud has %d instances (%v), want 1", len(list), err)
	}
	got, err := clean.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.ProviderID != list[0].Status.ProviderID {
		t.Errorf("retry launched %s, want the ghost %s", got.Status.ProviderID, list[0].Status.ProviderID)
	}
}

// Rates are drawn from the seed: the same seed fails the same calls.
func TestCallFaultsAreSeeded(t *testing.T) {
	draw := func(seed uint64) string {
		e := newEnv(t, nodeClass("default"))
		p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "c", Catalog: testCatalog, Clock: e.clock,
			CallFaults: CallFaults{Seed: seed, Throttle: 0.3, ServerError: 0.2, Capacity: 0.2}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for range 40 {
			_, err := p.Create(context.Background(), newNodeClaim("nc", "default"))
			switch {
			case err == nil:
				b.WriteByte('.')
			case cloudprovider.IsInsufficientCapacityError(err):
				b.WriteByte('c')
			case strings.Contains(err.Error(), "RequestLimitExceeded"):
				b.WriteByte('t')
			case strings.Contains(err.Error(), "InternalError"):
				b.WriteByte('5')
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		return b.String()
	}
	a, b := draw(3), draw(3)
	if a != b {
		t.Errorf("seed 3 drew %s then %s", a, b)
	}
	for _, c := range "ct5." {
		if !strings.ContainsRune(a, c) {
			t.Errorf("40 calls at these rates never produced %q: %s", c, a)
		}
	}
}
