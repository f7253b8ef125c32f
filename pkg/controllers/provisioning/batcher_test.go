package provisioning

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// The batcher tests run in a synctest bubble: the batcher keeps its real
// clock, time in the bubble moves only when every goroutine is blocked, and
// synctest.Wait returns once Wait has reacted to what the test just did. No
// test sleeps in wall time or guesses how long a goroutine needs.

// waiter runs b.Wait in the background.
type waiter struct{ done chan bool }

func waitAsync(ctx context.Context, b *Batcher) *waiter {
	w := &waiter{done: make(chan bool, 1)}
	go func() { w.done <- b.Wait(ctx) }()
	return w
}

func (w *waiter) expectOpen(t *testing.T) {
	t.Helper()
	synctest.Wait()
	select {
	case v := <-w.done:
		t.Fatalf("window closed early (%v)", v)
	default:
	}
}

// expectReturned checks that Wait has returned, with want.
func (w *waiter) expectReturned(t *testing.T, want bool) {
	t.Helper()
	synctest.Wait()
	select {
	case v := <-w.done:
		if v != want {
			t.Fatalf("Wait returned %v, want %v", v, want)
		}
	default:
		t.Fatal("Wait has not returned")
	}
}

func TestBatcherClosesAfterIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBatcher(clock.RealClock{}, time.Second, 10*time.Second)
		w := waitAsync(t.Context(), b)
		b.Trigger("a")
		time.Sleep(500 * time.Millisecond)
		w.expectOpen(t)
		time.Sleep(500 * time.Millisecond)
		w.expectReturned(t, true)
	})
}

func TestBatcherNewPodExtendsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBatcher(clock.RealClock{}, time.Second, 10*time.Second)
		w := waitAsync(t.Context(), b)
		b.Trigger("a")
		time.Sleep(900 * time.Millisecond)
		b.Trigger("b")
		time.Sleep(900 * time.Millisecond)
		w.expectOpen(t)
		time.Sleep(100 * time.Millisecond)
		w.expectReturned(t, true)
	})
}

func TestBatcherSamePodDoesNotExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBatcher(clock.RealClock{}, time.Second, 10*time.Second)
		w := waitAsync(t.Context(), b)
		b.Trigger("a")
		time.Sleep(900 * time.Millisecond)
		b.Trigger("a")
		time.Sleep(100 * time.Millisecond)
		w.expectReturned(t, true)
	})
}

func TestBatcherMaxDurationBoundsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBatcher(clock.RealClock{}, time.Second, 3*time.Second)
		w := waitAsync(t.Context(), b)
		b.Trigger("p0")
		// A new pod every half second would hold the window open forever
		// without the max duration.
		for i := 1; i <= 6; i++ {
			time.Sleep(500 * time.Millisecond)
			if i < 6 {
				w.expectOpen(t)
			}
			b.Trigger(types.UID("p" + string(rune('0'+i))))
		}
		w.expectReturned(t, true)
	})
}

func TestBatcherContextCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBatcher(clock.RealClock{}, time.Second, 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		w := waitAsync(ctx, b)
		b.Trigger("a")
		w.expectOpen(t)
		cancel()
		w.expectReturned(t, false)
	})
}
