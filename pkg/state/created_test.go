package state

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
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

// TestNodeClaimNameRetired: a name is retired once the model sees its
// NodeClaim being deleted or gone (informer, or a Synced list that no
// longer holds a created one), never while it lives, and for a day.
func TestNodeClaimNameRetired(t *testing.T) {
	deleting := func(name string) *v1.NodeClaim {
		nc := nodeClaim(name, "default", "")
		nc.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		nc.Finalizers = []string{v1.TerminationFinalizer}
		return nc
	}
	for _, tc := range []struct {
		name    string
		steps   func(c *Cluster, clk *clocktesting.FakeClock)
		retired bool
	}{
		{name: "a live NodeClaim", steps: func(c *Cluster, _ *clocktesting.FakeClock) { c.UpdateNodeClaim(nodeClaim("nc-1", "default", "")) }},
		{name: "a created NodeClaim", steps: func(c *Cluster, _ *clocktesting.FakeClock) { c.NodeClaimCreated(nodeClaim("nc-1", "default", "")) }},
		{name: "never seen", steps: func(*Cluster, *clocktesting.FakeClock) {}},
		{name: "being deleted", retired: true, steps: func(c *Cluster, _ *clocktesting.FakeClock) { c.UpdateNodeClaim(deleting("nc-1")) }},
		{name: "gone", retired: true, steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
			c.DeleteNodeClaim("nc-1")
		}},
		{name: "created, then a list shows it gone", retired: true, steps: func(c *Cluster, clk *clocktesting.FakeClock) {
			c.NodeClaimCreated(nodeClaim("nc-1", "default", ""))
			clk.Step(c.opts.CreatedTTL + c.opts.SyncedRecheckInterval + 1)
			c.Synced(t.Context())
		}},
		{name: "gone a day ago", steps: func(c *Cluster, clk *clocktesting.FakeClock) {
			c.UpdateNodeClaim(deleting("nc-1"))
			c.DeleteNodeClaim("nc-1")
			clk.Step(retiredNameTTL + time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			tc.steps(c, clk)
			if got := c.NodeClaimNameRetired("nc-1"); got != tc.retired {
				t.Errorf("NodeClaimNameRetired = %v, want %v", got, tc.retired)
			}
			if c.NodeClaimNameRetired("nc-2") {
				t.Error("another name is retired")
			}
		})
	}
}
