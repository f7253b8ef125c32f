package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestNodeClaimCreated checks the provisioner's record of a NodeClaim it
// just created: counted (with its nominated pods) before the informer
// delivers it, kept once the informer confirms it, dropped when no event
// confirms it within CreatedTTL, and never overwriting what the informer
// already delivered.
func TestNodeClaimCreated(t *testing.T) {
	tests := []struct {
		name string
		// informer runs before NodeClaimCreated when before is set, after
		// it otherwise; nil: no informer event.
		informer  func(c *Cluster)
		before    bool
		wantAfter bool // still tracked past CreatedTTL
	}{
		{name: "unconfirmed is dropped after the TTL"},
		{name: "confirmed by the informer stays", informer: func(c *Cluster) { c.UpdateNodeClaim(nodeClaim("nc-1", "default", "")) }, wantAfter: true},
		{name: "the informer's newer version is kept", before: true, wantAfter: true,
			informer: func(c *Cluster) { c.UpdateNodeClaim(nodeClaim("nc-1", "default", "sim://i-1")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			if tt.before {
				tt.informer(c)
			}
			c.NodeClaimCreated(nodeClaim("nc-1", "default", ""))
			c.Nominations().Nominate(pod("ns", "web", "", "1"), "nc-1")
			if tt.informer != nil && !tt.before {
				tt.informer(c)
			}
			sn, ok := c.NodeByName("nc-1")
			if !ok || len(sn.NominatedPods) != 1 || len(c.Nodes()) != 1 {
				t.Fatalf("a created NodeClaim is tracked with its nominated pod: %v %+v", ok, sn)
			}
			if tt.before && sn.ProviderID() != "sim://i-1" {
				t.Errorf("provider ID %q: the creator's older copy replaced the informer's", sn.ProviderID())
			}
			clk.Step(c.opts.CreatedTTL + 1)
			_, ok = c.NodeByName("nc-1")
			if ok != tt.wantAfter || (len(c.Nodes()) == 1) != tt.wantAfter {
				t.Fatalf("tracked past the TTL: %v, want %v", ok, tt.wantAfter)
			}
			if !tt.wantAfter {
				// The next write purges it, with its nominations.
				c.NodeClaimCreated(nodeClaim("nc-2", "default", ""))
				if _, nominated := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "web"}); nominated {
					t.Error("a pod nominated to a dropped NodeClaim is still nominated")
				}
			}
		})
	}
}
