package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNodeClaimCreated checks the provisioner's record of a NodeClaim it
// just created: counted (with its nominated pods) before the informer
// delivers it; kept, however late the informer is, while the API server
// holds it; dropped, with its nominations, by the first Synced list past
// CreatedTTL that no longer holds it; never overwriting what the informer
// already delivered.
func TestNodeClaimCreated(t *testing.T) {
	web := types.NamespacedName{Namespace: "ns", Name: "web"}
	tests := []struct {
		name string
		// informer runs before NodeClaimCreated when before is set, after
		// it otherwise; nil: no informer event.
		informer func(c *Cluster)
		before   bool
		// inAPI: the API server holds the NodeClaim.
		inAPI     bool
		wantAfter bool // still tracked past CreatedTTL and a Synced list
	}{
		{name: "unconfirmed but held by the API server stays", inAPI: true, wantAfter: true},
		{name: "unconfirmed and gone from the API server is dropped"},
		{name: "confirmed by the informer stays", inAPI: true, wantAfter: true,
			informer: func(c *Cluster) { c.UpdateNodeClaim(nodeClaim("nc-1", "default", "")) }},
		{name: "the informer's newer version is kept", before: true, inAPI: true, wantAfter: true,
			informer: func(c *Cluster) { c.UpdateNodeClaim(nodeClaim("nc-1", "default", "sim://i-1")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []client.Object
			if tt.inAPI {
				objs = append(objs, nodeClaim("nc-1", "default", ""))
			}
			c, clk, _ := newTestCluster(t, objs...)
			if tt.before {
				tt.informer(c)
			}
			c.NodeClaimCreated(nodeClaim("nc-1", "default", ""))
			c.Nominations().Nominate(pod("ns", "web", "", "1"), "nc-1")
			if tt.informer != nil && !tt.before {
				tt.informer(c)
			}
			tracked := func() bool {
				sn, ok := c.NodeByName("nc-1")
				if ok != (len(c.Nodes()) == 1) {
					t.Fatalf("NodeByName %v, Nodes %d", ok, len(c.Nodes()))
				}
				if _, held := c.liveNomination(web); held != ok || (ok && len(sn.NominatedPods) != 1) {
					t.Fatalf("tracked %v, pod nominated %v", ok, held)
				}
				return ok
			}
			if !tracked() {
				t.Fatal("a created NodeClaim is tracked with its nominated pod")
			}
			if sn, _ := c.NodeByName("nc-1"); tt.before && sn.ProviderID() != "sim://i-1" {
				t.Errorf("provider ID %q: the creator's older copy replaced the informer's", sn.ProviderID())
			}
			// Within the TTL a list does not judge the record: it may have
			// been served before the NodeClaim was created.
			c.Synced(t.Context())
			if !tracked() {
				t.Fatal("dropped by a list within the TTL")
			}
			clk.Step(c.opts.CreatedTTL + 1)
			if !tracked() {
				t.Fatal("dropped past the TTL before any list showed it gone")
			}
			clk.Step(c.opts.SyncedRecheckInterval)
			c.Synced(t.Context())
			if got := tracked(); got != tt.wantAfter {
				t.Fatalf("tracked past the TTL and a list: %v, want %v", got, tt.wantAfter)
			}
		})
	}
}
