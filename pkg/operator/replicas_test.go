package operator_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestTwoReplicasAreSafe runs two joiner replicas of one cluster (leader
// election on, as by default): one acts, the NodeClaims and instances match
// one to one; when the leader stops, the other takes over and provisions.
func TestTwoReplicasAreSafe(t *testing.T) {
	s := newScenario(t)
	s.apply()
	r1 := s.joiner()
	r2 := s.joiner()
	d := s.deployment("replicas", 10, "1", "1Gi", nil)
	s.waitRunning("replicas", 10, 90*time.Second)
	s.expectOneInstancePerNodeClaim()

	leader, standby := r1, r2
	if !acquired(r1) {
		leader, standby = r2, r1
	}
	if !acquired(leader) || acquired(standby) {
		t.Fatalf("want exactly one leader: replica 1 acquired=%v, replica 2 acquired=%v", acquired(r1), acquired(r2))
	}
	leader.stop()
	t.Logf("leader stopped; scaling up with the standby")

	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](20)
	if err := s.env.Client.Patch(t.Context(), d, patch); err != nil {
		t.Fatal(err)
	}
	s.waitRunning("replicas", 20, 90*time.Second)
	if !acquired(standby) {
		t.Fatal("the standby never acquired the lease")
	}
	s.expectOneInstancePerNodeClaim()
}

// acquired reports whether the replica's log says it became leader.
func acquired(j *joiner) bool {
	b, err := os.ReadFile(j.logPath)
	return err == nil && strings.Contains(string(b), "Successfully acquired lease")
}

// expectOneInstancePerNodeClaim waits until the cluster's live instances
// and its NodeClaims match one to one.
func (s *scenario) expectOneInstancePerNodeClaim() {
	s.t.Helper()
	test.Eventually(s.t, 30*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		for _, nc := range claims {
			ids[nc.Status.ProviderID] = true
		}
		instances := liveInstances(s.t, s.store, s.clusterName)
		for _, inst := range instances {
			if !ids[inst.Status.ProviderID] {
				return fmt.Errorf("instance %s has no NodeClaim", inst.Status.ProviderID)
			}
		}
		if len(instances) != len(claims) {
			return fmt.Errorf("%d instances for %d NodeClaims", len(instances), len(claims))
		}
		return nil
	})
}
