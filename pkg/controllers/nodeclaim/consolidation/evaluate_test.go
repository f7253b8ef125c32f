package consolidation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestEvaluate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	initialized := func(at time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(at)}}
	}
	for _, tc := range []struct {
		name        string
		after       string
		conds       []metav1.Condition
		lastPod     time.Time
		now         time.Time
		want        bool
		wantRequeue time.Duration
	}{
		{name: "Never clears", after: "Never", conds: initialized(t0), now: t0.Add(time.Hour)},
		{name: "not initialised clears", after: "30s", now: t0.Add(time.Hour)},
		{name: "quiet since initialisation", after: "30s", conds: initialized(t0), now: t0.Add(31 * time.Second), want: true},
		{name: "inside window after initialisation", after: "30s", conds: initialized(t0), now: t0.Add(10 * time.Second), wantRequeue: 20 * time.Second},
		{name: "a recent pod event restarts the window", after: "30s", conds: initialized(t0), lastPod: t0.Add(time.Minute), now: t0.Add(80 * time.Second), wantRequeue: 10 * time.Second},
		{name: "quiet since the last pod event", after: "30s", conds: initialized(t0), lastPod: t0.Add(time.Minute), now: t0.Add(2 * time.Minute), want: true},
		{name: "a pod event before initialisation does not shorten the window", after: "30s", conds: initialized(t0), lastPod: t0.Add(-time.Minute), now: t0.Add(10 * time.Second), wantRequeue: 20 * time.Second},
		{name: "zero consolidateAfter", after: "0s", conds: initialized(t0), now: t0, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{Status: v1.NodeClaimStatus{Conditions: tc.conds, LastPodEventTime: metav1.NewTime(tc.lastPod)}}
			if tc.lastPod.IsZero() {
				nc.Status.LastPodEventTime = metav1.Time{}
			}
			// A stale True must be cleared when the node is no longer quiet.
			if !tc.want {
				nc.StatusConditions().SetTrue(v1.ConditionTypeConsolidatable)
			}
			pool := &v1.NodePool{Spec: v1.NodePoolSpec{Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration(tc.after)}}}
			requeue := Evaluate(nc, pool, tc.now)
			if got := nc.StatusConditions().IsTrue(v1.ConditionTypeConsolidatable); got != tc.want {
				t.Errorf("Consolidatable = %v, want %v (conditions %+v)", got, tc.want, nc.Status.Conditions)
			}
			if !tc.want && nc.StatusConditions().Get(v1.ConditionTypeConsolidatable) != nil {
				t.Errorf("Consolidatable should be cleared, got %+v", nc.StatusConditions().Get(v1.ConditionTypeConsolidatable))
			}
			if requeue != tc.wantRequeue {
				t.Errorf("requeue = %s, want %s", requeue, tc.wantRequeue)
			}
		})
	}
}
