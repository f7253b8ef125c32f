package events

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

func TestRecorderSuppressesIdenticalEventsWithinTimeout(t *testing.T) {
	sink := kevents.NewFakeRecorder(10)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(sink, clk)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"}}

	r.Publish(Warning(node, ArchitectureMismatch, "Initialize", "arch %s", "arm64"))
	r.Publish(Warning(node, ArchitectureMismatch, "Initialize", "arch %s", "arm64"))
	if got := len(sink.Events); got != 1 {
		t.Fatalf("after two identical events: %d published, want 1", got)
	}
	r.Publish(Warning(node, ArchitectureMismatch, "Initialize", "arch %s", "amd64"))
	if got := len(sink.Events); got != 2 {
		t.Fatalf("a different message must publish: %d published, want 2", got)
	}
	clk.SetTime(clk.Now().Add(DefaultDedupeTimeout + time.Second))
	r.Publish(Warning(node, ArchitectureMismatch, "Initialize", "arch %s", "arm64"))
	if got := len(sink.Events); got != 3 {
		t.Fatalf("after the timeout the event must publish again: %d published, want 3", got)
	}
	if e := <-sink.Events; e != "Warning ArchitectureMismatch arch arm64" {
		t.Fatalf("first event = %q", e)
	}
}

func TestRecorderTruncatesLongNotes(t *testing.T) {
	sink := kevents.NewFakeRecorder(1)
	r := NewRecorder(sink, nil)
	long := make([]byte, 3000)
	for i := range long {
		long[i] = 'x'
	}
	r.Publish(Normal(&corev1.Pod{}, Nominated, "Nominate", "%s", string(long)))
	if got := len(<-sink.Events); got > len("Normal Nominated ")+maxNoteLength {
		t.Fatalf("event note length %d exceeds the events.k8s.io limit", got)
	}
}

// TestRecorderLimitsTheEventRate: beyond the burst, events of a type are
// dropped (and counted) until the bucket refills; Warnings have their own
// bucket; a dropped event is not remembered, so it goes out once allowed.
func TestRecorderLimitsTheEventRate(t *testing.T) {
	sink := kevents.NewFakeRecorder(3 * EventBurst)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRecorder(sink, clk)
	dropped := func() float64 {
		return testutil.ToFloat64(metrics.EventsDropped.WithLabelValues(corev1.EventTypeNormal, Nominated))
	}
	before := dropped()
	pod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprint(i))}}
	}
	for i := range EventBurst + 10 {
		r.Publish(Normal(pod(i), Nominated, "Nominate", "planned"))
	}
	if got := len(sink.Events); got != EventBurst {
		t.Fatalf("%d events sent for %d published, want the burst %d", got, EventBurst+10, EventBurst)
	}
	if got := dropped() - before; got != 10 {
		t.Fatalf("joiner_events_dropped_total grew by %v, want 10", got)
	}
	r.Publish(Warning(pod(0), FailedScheduling, "Schedule", "no room"))
	if got := len(sink.Events); got != EventBurst+1 {
		t.Fatalf("a Warning was held back by Normal events: %d sent", got)
	}
	// One second refills EventQPS tokens: the dropped pod's event goes out.
	clk.SetTime(clk.Now().Add(time.Second))
	r.Publish(Normal(pod(EventBurst), Nominated, "Nominate", "planned"))
	if got := len(sink.Events); got != EventBurst+2 {
		t.Fatalf("a dropped event was remembered as sent: %d sent", got)
	}
}
