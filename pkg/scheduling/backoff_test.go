package scheduling_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestBackoffIsUnavailability checks that a NodePool's instance types
// backing off after failed launches are unavailable, not an error: pods go
// to the other instance types or NodePools, and a pod nothing else can
// carry gets a BackingOff reason naming the NodePool, the cause and the
// next attempt. A back-off that ended at Now no longer applies.
func TestBackoffIsUnavailability(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	backoff := func(next time.Duration, types ...string) scheduling.LaunchBackoff {
		return scheduling.LaunchBackoff{InstanceTypes: types, What: "image img-1 (amd64)", Phase: "Registration",
			Cause: "NodeNotFound", Failures: 2, NextAttempt: now.Add(next)}
	}
	types := func() []*scheduling.InstanceType {
		return []*scheduling.InstanceType{instanceType("small", 2), instanceType("large", 8)}
	}
	tests := []struct {
		name string
		// backoffs of the "failing" pool (weight 10); fallback (weight 1)
		// exists when withFallback.
		backoffs     []scheduling.LaunchBackoff
		withFallback bool
		pods         []*corev1.Pod
		// want is "pool:type" per new NodeClaim, in plan order.
		want         []string
		wantBackoff  int // pods with a BackingOff reason for "failing"
		wantMentions []string
	}{
		{
			name: "no back-off launches on the heavier pool",
			pods: one(pod("p", "1", "")), withFallback: true,
			want: []string{"failing:small"},
		},
		{
			name:     "a backed-off pool falls back to the next by weight",
			backoffs: []scheduling.LaunchBackoff{backoff(time.Minute, "small", "large")}, withFallback: true,
			pods: one(pod("p", "1", "")),
			want: []string{"fallback:small"},
		},
		{
			name:     "a backed-off instance type falls back to the pool's other types",
			backoffs: []scheduling.LaunchBackoff{backoff(time.Minute, "small")}, withFallback: true,
			pods: one(pod("p", "1", "")),
			want: []string{"failing:large"},
		},
		{
			name:     "pods only the backed-off pool can carry wait, told why",
			backoffs: []scheduling.LaunchBackoff{backoff(5*time.Minute, "small", "large")}, withFallback: true,
			pods:        one(pod("p", "1", "", nodeSelector("karpenter.sh/nodepool", "failing"))),
			wantBackoff: 1,
			wantMentions: []string{"nodepool failing is backing off", "image img-1 (amd64) failed to register 2 time(s)",
				"NodeNotFound", "next attempt at 2026-01-01T12:05:00Z"},
		},
		{
			name:     "a back-off that ended at Now no longer applies",
			backoffs: []scheduling.LaunchBackoff{backoff(0, "small", "large")}, withFallback: true,
			pods: one(pod("p", "1", "")),
			want: []string{"failing:small"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failing := nodePool("failing", poolWeight(10))
			failing.Backoffs = tt.backoffs
			pools := []*scheduling.NodePool{failing}
			if tt.withFallback {
				pools = append(pools, nodePool("fallback", poolWeight(1)))
			}
			s := snapshot(pools, types(), tt.pods)
			s.Now = now
			plan, err := scheduling.Solve(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, s, plan)
			var got []string
			for _, nc := range plan.NewNodeClaims {
				got = append(got, nc.NodePool+":"+nc.InstanceTypes[0].Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("new nodeclaims %v, want %v", got, tt.want)
			}
			backingOff := 0
			for _, pe := range plan.Unschedulable {
				r, ok := pe.NodePools["failing"].(scheduling.BackingOff)
				if !ok {
					t.Errorf("pod %s: reason %#v, want BackingOff", pe.Pod.Name, pe.NodePools["failing"])
					continue
				}
				backingOff++
				msg := scheduling.Message(r)
				for _, m := range tt.wantMentions {
					if !strings.Contains(msg, m) {
						t.Errorf("message %q does not mention %q", msg, m)
					}
				}
			}
			if backingOff != tt.wantBackoff {
				t.Errorf("%d pods backing off, want %d", backingOff, tt.wantBackoff)
			}
		})
	}
}
