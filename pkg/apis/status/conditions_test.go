package status_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

type object struct {
	generation int64
	conditions []metav1.Condition
}

func (o *object) GetGeneration() int64               { return o.generation }
func (o *object) GetConditions() []metav1.Condition  { return o.conditions }
func (o *object) SetConditions(c []metav1.Condition) { o.conditions = c }

func TestRootRollsUpDependents(t *testing.T) {
	for _, tc := range []struct {
		name       string
		set        func(s status.ConditionSet)
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "initialised: all unknown", set: func(s status.ConditionSet) { s.Initialize() },
			wantStatus: metav1.ConditionUnknown, wantReason: status.ReasonAwaitingReconciliation},
		{name: "one true, others missing", set: func(s status.ConditionSet) { s.SetTrue("A") },
			wantStatus: metav1.ConditionUnknown, wantReason: status.ReasonAwaitingReconciliation},
		{name: "all true", set: func(s status.ConditionSet) { s.SetTrue("A"); s.SetTrue("B") },
			wantStatus: metav1.ConditionTrue, wantReason: status.ReasonReady},
		{name: "false wins over unknown", set: func(s status.ConditionSet) {
			s.SetUnknownWithReason("A", "Pending", "")
			s.SetFalse("B", "Broken", "it broke")
		}, wantStatus: metav1.ConditionFalse, wantReason: "Broken"},
		{name: "unknown carries the dependent's reason", set: func(s status.ConditionSet) {
			s.SetTrue("A")
			s.SetUnknownWithReason("B", "NodeNotFound", "waiting")
		}, wantStatus: metav1.ConditionUnknown, wantReason: "NodeNotFound"},
		{name: "non-dependent does not gate", set: func(s status.ConditionSet) {
			s.SetTrue("A")
			s.SetTrue("B")
			s.SetFalse("Other", "Whatever", "")
		}, wantStatus: metav1.ConditionTrue, wantReason: status.ReasonReady},
		{name: "clearing a dependent makes root unknown", set: func(s status.ConditionSet) {
			s.SetTrue("A")
			s.SetTrue("B")
			s.Clear("B")
		}, wantStatus: metav1.ConditionUnknown, wantReason: status.ReasonAwaitingReconciliation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &object{generation: 3}
			s := status.For(o, "Ready", "A", "B")
			tc.set(s)
			root := s.Get("Ready")
			if root == nil {
				t.Fatal("no root condition")
			}
			if root.Status != tc.wantStatus || root.Reason != tc.wantReason {
				t.Fatalf("root = %s/%s (%q), want %s/%s", root.Status, root.Reason, root.Message, tc.wantStatus, tc.wantReason)
			}
			if root.ObservedGeneration != 3 {
				t.Fatalf("observedGeneration = %d, want 3", root.ObservedGeneration)
			}
			if s.IsTrue("Ready") != (tc.wantStatus == metav1.ConditionTrue) {
				t.Fatalf("IsTrue(Ready) disagrees with status %s", root.Status)
			}
		})
	}
}

func TestTransitionTimeMovesOnlyOnStatusChange(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	o := &object{}
	s := status.For(o, "Ready", "A").WithClock(clk)

	if !s.SetFalse("A", "Waiting", "first") {
		t.Fatal("first set reported no change")
	}
	clk.SetTime(start.Add(time.Minute))
	if !s.SetFalse("A", "Waiting", "second message") {
		t.Fatal("message change reported no change")
	}
	if got := s.Get("A").LastTransitionTime.Time; !got.Equal(start) {
		t.Fatalf("transition time moved without a status change: %v", got)
	}
	if s.SetFalse("A", "Waiting", "second message") {
		t.Fatal("identical set reported a change")
	}
	clk.SetTime(start.Add(2 * time.Minute))
	s.SetTrue("A")
	if got := s.Get("A").LastTransitionTime.Time; !got.Equal(start.Add(2 * time.Minute)) {
		t.Fatalf("transition time = %v, want the time of the status change", got)
	}
	if got := s.Get("A").Reason; got != "A" {
		t.Fatalf("SetTrue reason = %q, want the condition type", got)
	}
	if !s.IsTrue("Ready", "A") || s.IsFalse("A") || s.IsUnknown("A") {
		t.Fatal("predicates disagree with a True condition")
	}
	if !s.IsUnknown("Missing") {
		t.Fatal("a missing condition must read as Unknown")
	}
}

func TestAtStampsTheDecisionTime(t *testing.T) {
	decided := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	o := &object{}
	s := status.For(o, "Ready", "A").At(decided)
	s.SetFalse("A", "Waiting", "decided")
	if got := s.Get("A").LastTransitionTime.Time; !got.Equal(decided) {
		t.Fatalf("transition time = %v, want the decision's time %v", got, decided)
	}
	if got := s.Get("Ready").LastTransitionTime.Time; !got.Equal(decided) {
		t.Fatalf("root transition time = %v, want %v", got, decided)
	}
}
