package provisioning_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/controllers/provisioning"
	"github.com/joiner-dev/joiner/pkg/state"
)

// TestProvisionKeepsNodeClaimsItsInformerHasNotDelivered: under a slow
// kube-apiserver the NodeClaim informer can lag past the cluster state's
// CreatedTTL (30 s). A pass then runs for pods that arrived since (a
// scale-out's pods reach the provisioner a few at a time): it must plan
// those pods only, not again the pods already planned onto NodeClaims the
// API server holds. Before, the state forgot each NodeClaim 30 s after its
// creation unless the informer had confirmed it, so the pass planned the
// earlier pods with the new ones, in a new grouping under a new name, and
// the earlier NodeClaim launched with no pod to take (with one pod per
// NodeClaim the names, derived from the pods, would have led the pass
// back to the same NodeClaims; small pods share one).
func TestProvisionKeepsNodeClaimsItsInformerHasNotDelivered(t *testing.T) {
	f := newFixture(t)
	f.createNodePool(nil)
	early := f.pendingPods(2, "100m", nil)
	r := f.replica()
	r.staleClaims = true // the informer delivers no NodeClaim in this test
	first := r.provision()
	if len(first.Created) == 0 || first.Pending != len(early) {
		t.Fatalf("first pass: %d pending, %d NodeClaims created", first.Pending, len(first.Created))
	}

	f.clock.Step(state.DefaultCreatedTTL + state.DefaultSyncedRecheckInterval + time.Second)
	late := f.pendingPods(2, "100m", func(p *corev1.Pod) { p.Name = "late-" + p.Name })
	second := r.provision()
	if second.Pending != len(late) {
		t.Errorf("the pass after the NodeClaims' TTL planned %d pods, want the %d that arrived since: the earlier pods were planned again though their NodeClaims %s exist",
			second.Pending, len(late), names(first))
	}
	for _, pod := range early {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		if nc, _, ok := r.state.Nominations().Holds(key); !ok {
			t.Errorf("pod %s is no longer held by a NodeClaim", key)
		} else if !slices.Contains(names(first), nc) {
			t.Errorf("pod %s moved to NodeClaim %s from %v", key, nc, names(first))
		}
	}
	for _, nc := range f.nodeClaims() {
		if len(r.state.Nominations().PodsNominatedTo(nc.Name)) == 0 {
			t.Errorf("NodeClaim %s launches with no pod planned for it (%d NodeClaims for %d pods)", nc.Name, len(f.nodeClaims()), len(early)+len(late))
		}
	}
}

// names are the names of the NodeClaims a pass created.
func names(res *provisioning.Result) []string {
	out := make([]string, len(res.Created))
	for i, nc := range res.Created {
		out[i] = nc.Name
	}
	return out
}
