package metrics

import (
	"fmt"
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

// BenchmarkObjectStatusGather is one scrape of 2,000 objects of seven
// conditions each, built at scrape time, against the gauge vectors that
// kept them ready-built.
func BenchmarkObjectStatusGather(b *testing.B) {
	const objects, conds = 2000, 7
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	labels := []string{"namespace", "name", "type", "status", "reason"}
	for _, kind := range []string{"scrape-time", "gauge-vec"} {
		b.Run(kind, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			switch kind {
			case "scrape-time":
				o := &ObjectStatus{
					count:       prometheus.NewDesc("c", "h", labels, nil),
					seconds:     prometheus.NewDesc("s", "h", labels, nil),
					termination: prometheus.NewDesc("t", "h", []string{"namespace", "name"}, nil),
					clock:       clocktesting.NewFakePassiveClock(t0), objects: map[types.NamespacedName]objectStatus{},
				}
				for i := range objects {
					var cs []metav1.Condition
					for j := range conds {
						cs = append(cs, metav1.Condition{Type: fmt.Sprintf("Type%d", j), Status: metav1.ConditionTrue, Reason: "Reason", LastTransitionTime: metav1.NewTime(t0)})
					}
					o.Set(types.NamespacedName{Name: fmt.Sprintf("nodeclaim-%05d", i)}, cs, nil)
				}
				reg.MustRegister(o)
			default:
				c := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "c", Help: "h"}, labels)
				s := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "s", Help: "h"}, labels)
				for i := range objects {
					for j := range conds {
						l := []string{"", fmt.Sprintf("nodeclaim-%05d", i), fmt.Sprintf("Type%d", j), "True", "Reason"}
						c.WithLabelValues(l...).Set(1)
						s.WithLabelValues(l...).Set(60)
					}
				}
				reg.MustRegister(c, s)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
