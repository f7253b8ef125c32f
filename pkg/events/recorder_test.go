package events

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
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
