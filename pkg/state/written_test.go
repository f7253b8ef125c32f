package state

import (
	"testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestNodeClaimWritten checks the lifecycle's hand-over of the NodeClaim
// versions it writes: taken ahead of the informer, never replaced by an
// older version from either side, ignored for a NodeClaim the model does
// not hold, and proof of life for one the informer has not confirmed yet.
func TestNodeClaimWritten(t *testing.T) {
	version := func(rv, providerID string) func() *v1.NodeClaim {
		return func() *v1.NodeClaim {
			nc := nodeClaim("nc-1", "default", providerID)
			nc.UID = "uid-1"
			nc.ResourceVersion = rv
			return nc
		}
	}
	tests := []struct {
		name   string
		do     func(c *Cluster)
		wantID string // the provider ID the model holds; "" for not held
	}{
		{name: "a written version is taken ahead of the informer", wantID: "sim://i-1", do: func(c *Cluster) {
			c.UpdateNodeClaim(version("5", "")())
			c.NodeClaimWritten(version("7", "sim://i-1")())
		}},
		{name: "the informer's older version arriving later is ignored", wantID: "sim://i-1", do: func(c *Cluster) {
			c.UpdateNodeClaim(version("5", "")())
			c.NodeClaimWritten(version("7", "sim://i-1")())
			c.UpdateNodeClaim(version("5", "")())
		}},
		{name: "the informer's newer version replaces it", wantID: "sim://i-2", do: func(c *Cluster) {
			c.UpdateNodeClaim(version("5", "")())
			c.NodeClaimWritten(version("7", "sim://i-1")())
			c.UpdateNodeClaim(version("9", "sim://i-2")())
		}},
		{name: "a written version older than the model's is ignored", wantID: "sim://i-2", do: func(c *Cluster) {
			c.UpdateNodeClaim(version("9", "sim://i-2")())
			c.NodeClaimWritten(version("7", "sim://i-1")())
		}},
		{name: "a NodeClaim the model does not hold stays unheld", do: func(c *Cluster) {
			c.NodeClaimWritten(version("7", "sim://i-1")())
		}},
		{name: "a written version of a deleted namesake is ignored", wantID: "sim://i-2", do: func(c *Cluster) {
			recreated := version("9", "sim://i-2")()
			recreated.UID = "uid-2"
			c.UpdateNodeClaim(recreated)
			c.NodeClaimWritten(version("12", "sim://i-1")())
		}},
		{name: "a namesake's version is not older", wantID: "sim://i-3", do: func(c *Cluster) {
			c.UpdateNodeClaim(version("9", "sim://i-2")())
			other := version("3", "sim://i-3")()
			other.UID = "uid-2"
			c.UpdateNodeClaim(other)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newTestCluster(t)
			tt.do(c)
			sn, ok := c.NodeByName("nc-1")
			if got := ""; ok {
				got = sn.ProviderID()
				if got != tt.wantID {
					t.Fatalf("model holds provider ID %q, want %q", got, tt.wantID)
				}
			} else if tt.wantID != "" {
				t.Fatalf("model does not hold nc-1, want provider ID %q", tt.wantID)
			}
		})
	}
}

// TestNodeClaimWrittenProvesAnUnconfirmedCreate: a NodeClaim created but
// not yet delivered by the informer outlives CreatedTTL while its writer
// keeps writing it (the watch lags; the NodeClaim exists).
func TestNodeClaimWrittenProvesAnUnconfirmedCreate(t *testing.T) {
	c, clk, _ := newTestCluster(t)
	nc := nodeClaim("nc-1", "default", "")
	nc.UID, nc.ResourceVersion = "uid-1", "5"
	c.NodeClaimCreated(nc)
	clk.Step(c.opts.CreatedTTL / 2)
	written := nodeClaim("nc-1", "default", "sim://i-1")
	written.UID, written.ResourceVersion = "uid-1", "7"
	c.NodeClaimWritten(written)
	clk.Step(c.opts.CreatedTTL/2 + 1)
	if _, ok := c.NodeByName("nc-1"); !ok {
		t.Fatal("a NodeClaim written within its CreatedTTL was dropped")
	}
	clk.Step(c.opts.CreatedTTL)
	if _, ok := c.NodeByName("nc-1"); ok {
		t.Fatal("a NodeClaim neither confirmed nor written for CreatedTTL is still held")
	}
}
