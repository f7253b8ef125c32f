package v1

import (
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAllowedDisruptions(t *testing.T) {
	nine := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) // a Monday
	for _, tc := range []struct {
		name    string
		budgets []Budget
		now     time.Time
		total   int
		reason  DisruptionReason
		want    int
	}{
		{name: "no budgets is unlimited", total: 10, now: nine, reason: DisruptionReasonEmpty, want: math.MaxInt32},
		{name: "percent rounds up", budgets: []Budget{{Nodes: "10%"}}, total: 11, now: nine, reason: DisruptionReasonEmpty, want: 2},
		{name: "most restrictive wins", budgets: []Budget{{Nodes: "50%"}, {Nodes: "3"}}, total: 10, now: nine, reason: DisruptionReasonDrifted, want: 3},
		{name: "reason-scoped budget ignored for other reasons",
			budgets: []Budget{{Nodes: "0", Reasons: []DisruptionReason{DisruptionReasonDrifted}}, {Nodes: "5"}},
			total:   10, now: nine, reason: DisruptionReasonEmpty, want: 5},
		{name: "reason-scoped budget applies to its reason",
			budgets: []Budget{{Nodes: "0", Reasons: []DisruptionReason{DisruptionReasonDrifted}}, {Nodes: "5"}},
			total:   10, now: nine, reason: DisruptionReasonDrifted, want: 0},
		{name: "scheduled budget active inside its window",
			budgets: []Budget{{Nodes: "0", Schedule: ptr.To("0 9 * * 1-5"), Duration: &metav1.Duration{Duration: 8 * time.Hour}}},
			total:   10, now: nine.Add(3 * time.Hour), reason: DisruptionReasonUnderutilized, want: 0},
		{name: "scheduled budget inactive outside its window",
			budgets: []Budget{{Nodes: "0", Schedule: ptr.To("0 9 * * 1-5"), Duration: &metav1.Duration{Duration: 8 * time.Hour}}},
			total:   10, now: nine.Add(9 * time.Hour), reason: DisruptionReasonUnderutilized, want: math.MaxInt32},
		{name: "macro schedule",
			budgets: []Budget{{Nodes: "1", Schedule: ptr.To("@daily"), Duration: &metav1.Duration{Duration: 10 * time.Minute}}},
			total:   10, now: time.Date(2026, 3, 2, 0, 5, 0, 0, time.UTC), reason: DisruptionReasonEmpty, want: 1},
		{name: "invalid budget fails closed", budgets: []Budget{{Nodes: "lots"}}, total: 10, now: nine, reason: DisruptionReasonEmpty, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &NodePool{Spec: NodePoolSpec{Disruption: Disruption{Budgets: tc.budgets}}}
			if got := np.AllowedDisruptions(tc.now, tc.total, tc.reason); got != tc.want {
				t.Fatalf("AllowedDisruptions = %d, want %d", got, tc.want)
			}
		})
	}
}
