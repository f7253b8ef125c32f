package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

func TestParseCallFaults(t *testing.T) {
	tests := []struct {
		in      string
		want    CallFaults
		wantErr string
	}{
		{in: "", want: CallFaults{}},
		{in: "seed=7,throttle=0.1,5xx=0.05,capacity=0.2,slow=0.5,slow-for=3s,ghost=1",
			want: CallFaults{Seed: 7, Throttle: 0.1, ServerError: 0.05, Capacity: 0.2, Slow: 0.5, SlowFor: 3 * time.Second, Ghost: 1}},
		{in: "slow=0.5", want: CallFaults{Slow: 0.5, SlowFor: 2 * time.Second}},
		{in: "ghost=2", wantErr: "ghost rate \"2\" must be a number between 0 and 1"},
		{in: "flaky=0.1", wantErr: "unknown key \"flaky\""},
		{in: "seed", wantErr: "is not key=value"},
		{in: "seed=-1", wantErr: "seed \"-1\" is not an unsigned integer"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCallFaults(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if again, err := ParseCallFaults(got.String()); err != nil || again != got {
				t.Fatalf("String %q does not round-trip: %+v, %v", got.String(), again, err)
			}
		})
	}
}

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
