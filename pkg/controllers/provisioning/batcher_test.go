package provisioning

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitAsync runs b.Wait in the background and returns a channel that gets
// its result.
func waitAsync(ctx context.Context, b *Batcher) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- b.Wait(ctx) }()
	return done
}

// stepUntilWaiters advances the fake clock by d once the batcher has armed
// both of its timers.
func step(t *testing.T, clk *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("batcher never armed its timers")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(d)
}

func expectOpen(t *testing.T, done <-chan bool) {
	t.Helper()
	select {
	case v := <-done:
		t.Fatalf("window closed early (%v)", v)
	case <-time.After(20 * time.Millisecond):
	}
}

func expectClosed(t *testing.T, done <-chan bool) {
	t.Helper()
	select {
	case v := <-done:
		if !v {
			t.Fatal("Wait returned false")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("window never closed")
	}
}

func TestBatcherClosesAfterIdle(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(t.Context(), b)
	b.Trigger("a")
	step(t, clk, 500*time.Millisecond)
	expectOpen(t, done)
	clk.Step(500 * time.Millisecond)
	expectClosed(t, done)
}

func TestBatcherNewPodExtendsWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(t.Context(), b)
	b.Trigger("a")
	step(t, clk, 900*time.Millisecond)
	b.Trigger("b")
	time.Sleep(20 * time.Millisecond) // let Wait re-arm the idle timer
	clk.Step(900 * time.Millisecond)
	expectOpen(t, done)
	clk.Step(100 * time.Millisecond)
	expectClosed(t, done)
}

func TestBatcherSamePodDoesNotExtend(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := waitAsync(t.Context(), b)
	b.Trigger("a")
	step(t, clk, 900*time.Millisecond)
	b.Trigger("a")
	time.Sleep(20 * time.Millisecond)
	clk.Step(100 * time.Millisecond)
	expectClosed(t, done)
}

func TestBatcherMaxDurationBoundsWindow(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 3*time.Second)
	done := waitAsync(t.Context(), b)
	b.Trigger("p0")
	step(t, clk, 0)
	for i := 1; i <= 6; i++ {
		time.Sleep(10 * time.Millisecond)
		clk.Step(500 * time.Millisecond)
		if i < 6 {
			expectOpen(t, done)
		}
		b.Trigger(types.UID("p" + string(rune('0'+i))))
	}
	expectClosed(t, done)
}

func TestBatcherContextCancelled(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := NewBatcher(clk, time.Second, 10*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan bool, 1)
	go func() { done <- b.Wait(ctx) }()
	cancel()
	select {
	case v := <-done:
		if v {
			t.Fatal("Wait returned true after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after cancel")
	}
}
