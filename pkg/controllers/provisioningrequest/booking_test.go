package provisioningrequest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
)

func TestBookingsConsumes(t *testing.T) {
	b := NewBookings()
	served := types.NamespacedName{Namespace: "ml", Name: "gang"}
	b.serve(served, true)
	held := types.NamespacedName{Namespace: "ml", Name: "held"}
	b.hold(held, autoscalingv1.ClassBestEffortAtomicScaleUp, map[string][]*corev1.Pod{"nc-a": {{}}, "nc-b": {{}, {}}})
	pod := func(ns, request string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		if request != "" {
			p.Annotations = map[string]string{autoscalingv1.AnnotationConsumeProvisioningRequest: request}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "no annotation", pod: pod("ml", ""), want: false},
		{name: "a served request", pod: pod("ml", "gang"), want: true},
		{name: "a held booking", pod: pod("ml", "held"), want: true},
		{name: "same name in another namespace", pod: pod("other", "gang"), want: false},
		{name: "an unknown request", pod: pod("ml", "nope"), want: false},
	} {
		if got := b.Consumes(tc.pod); got != tc.want {
			t.Errorf("%s: Consumes = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := len(b.Booked("nc-b")); got != 2 {
		t.Errorf("Booked(nc-b) = %d placeholders, want 2", got)
	}
	b.release(held)
	b.serve(served, false)
	if b.Consumes(pod("ml", "held")) || b.Consumes(pod("ml", "gang")) || len(b.Booked("nc-a")) != 0 {
		t.Error("released and unserved requests still hold pods or room")
	}
}

func TestBackoffDoubles(t *testing.T) {
	b := newBackoff(10*time.Second, time.Minute)
	key := types.NamespacedName{Name: "x"}
	now := time.Unix(0, 0)
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
		if got := b.failed(key, now); got != want {
			t.Errorf("failure %d: wait %s, want %s", i+1, got, want)
		}
	}
	if w := b.wait(key, now.Add(30*time.Second)); w != 30*time.Second {
		t.Errorf("wait %s, want 30s", w)
	}
	b.forget(key)
	if w := b.wait(key, now); w != 0 {
		t.Errorf("wait after forget %s, want 0", w)
	}
}

// Bookings are synced once every request that existed at start was
// reconciled, whether it was reconciled before or after the list.
func TestBookingsSynced(t *testing.T) {
	a := types.NamespacedName{Namespace: "ml", Name: "a"}
	b := types.NamespacedName{Namespace: "ml", Name: "b"}
	for _, tc := range []struct {
		name   string
		steps  func(*Bookings)
		synced bool
	}{
		{name: "nothing listed yet", steps: func(*Bookings) {}, synced: false},
		{name: "no requests at start", steps: func(bk *Bookings) { bk.restoring(nil) }, synced: true},
		{name: "one of two reconciled", steps: func(bk *Bookings) { bk.restoring([]types.NamespacedName{a, b}); bk.restored(a) }, synced: false},
		{name: "both reconciled after the list", steps: func(bk *Bookings) {
			bk.restoring([]types.NamespacedName{a, b})
			bk.restored(b)
			bk.restored(a)
		}, synced: true},
		{name: "one reconciled before the list", steps: func(bk *Bookings) {
			bk.restored(a)
			bk.restoring([]types.NamespacedName{a, b})
			bk.restored(b)
		}, synced: true},
		{name: "reconciled before the list, the other not yet", steps: func(bk *Bookings) {
			bk.restored(a)
			bk.restoring([]types.NamespacedName{a, b})
		}, synced: false},
	} {
		bk := NewBookings()
		tc.steps(bk)
		if got := bk.Synced(); got != tc.synced {
			t.Errorf("%s: Synced = %v, want %v", tc.name, got, tc.synced)
		}
	}
}
