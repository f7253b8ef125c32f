package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestObjectStatusComputesItsGaugesWhenScraped: the gauges are what the
// objects have at the scrape, aged by the clock then; a condition type
// listed twice is published once; a deleting object has its termination
// gauge; a deleted object has nothing.
func TestObjectStatusComputesItsGaugesWhenScraped(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0.Add(time.Minute))
	reg := prometheus.NewPedanticRegistry()
	o := &ObjectStatus{
		count:       prometheus.NewDesc("test_status_condition_count", "h", []string{"namespace", "name", "type", "status", "reason"}, nil),
		seconds:     prometheus.NewDesc("test_status_condition_current_status_seconds", "h", []string{"namespace", "name", "type", "status", "reason"}, nil),
		termination: prometheus.NewDesc("test_termination_current_time_seconds", "h", []string{"namespace", "name"}, nil),
		clock:       clocktesting.NewFakePassiveClock(t0), objects: map[types.NamespacedName]objectStatus{},
	}
	reg.MustRegister(o)
	o.SetClock(clk)
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(t0)}
	o.Set(types.NamespacedName{Name: "a"}, []metav1.Condition{ready, ready}, nil)
	deleted := metav1.NewTime(t0.Add(50 * time.Second))
	o.Set(types.NamespacedName{Name: "b"}, nil, &deleted)
	o.Set(types.NamespacedName{Name: "c"}, []metav1.Condition{ready}, nil)
	o.Delete(types.NamespacedName{Name: "c"})

	want := `# HELP test_status_condition_count h
# TYPE test_status_condition_count gauge
test_status_condition_count{name="a",namespace="",reason="KubeletReady",status="True",type="Ready"} 1
# HELP test_status_condition_current_status_seconds h
# TYPE test_status_condition_current_status_seconds gauge
test_status_condition_current_status_seconds{name="a",namespace="",reason="KubeletReady",status="True",type="Ready"} 60
# HELP test_termination_current_time_seconds h
# TYPE test_termination_current_time_seconds gauge
test_termination_current_time_seconds{name="b",namespace=""} 10
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.NewReplacer("} 60", "} 90", "} 10", "} 40").Replace(want))); err != nil {
		t.Fatalf("30 s later: %v", err)
	}
}
