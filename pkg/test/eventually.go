package test

import (
	"context"
	"strconv"
	"time"
)

// Timeouts for Eventually. The control plane is local, so anything that
// takes longer than DefaultTimeout is a failure, not a slow machine.
const (
	DefaultTimeout = 30 * time.Second
	// pollMin and pollMax bound the pause between two checks.
	pollMin = 10 * time.Millisecond
	pollMax = 250 * time.Millisecond
	// checkTimeout bounds one call of a check.
	checkTimeout = 10 * time.Second
)

// TB is the part of testing.TB the polling helpers use.
type TB interface {
	Helper()
	Context() context.Context
	Fatalf(format string, args ...any)
}

// Eventually calls check until it returns nil, pausing a little longer each
// time, and fails t with check's last error when timeout (DefaultTimeout if
// zero) has passed. check gets a context that ends with the test.
//
//	test.Eventually(t, 0, func(ctx context.Context) error {
//		if err := c.Get(ctx, key, &node); err != nil {
//			return err
//		}
//		if !ready(&node) {
//			return fmt.Errorf("node %s is not ready", node.Name)
//		}
//		return nil
//	})
func Eventually(t TB, timeout time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	if err := Poll(t.Context(), timeout, check); err != nil {
		t.Fatalf("%v", err)
	}
}

// Consistently calls check until duration has passed and fails t as soon
// as it returns an error.
func Consistently(t TB, duration time.Duration, check func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(duration)
	pause := pollMin
	for {
		err := callCheck(t.Context(), check)
		if err != nil {
			t.Fatalf("condition stopped holding after %s: %v", duration-time.Until(deadline).Round(time.Millisecond), err)
		}
		if time.Now().After(deadline) {
			return
		}
		if !sleepCtx(t.Context(), min(pause, time.Until(deadline))) {
			t.Fatalf("test ended while checking a condition: %v", context.Cause(t.Context()))
		}
		pause = min(pause*2, pollMax)
	}
}

// Poll is Eventually without a testing.TB: it returns nil once check does,
// or an error naming check's last error once timeout (DefaultTimeout if zero)
// has passed or ctx ends.
func Poll(ctx context.Context, timeout time.Duration, check func(ctx context.Context) error) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	start := time.Now()
	deadline := start.Add(timeout)
	pause := pollMin
	for attempt := 1; ; attempt++ {
		err := callCheck(ctx, check)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return &PollError{Waited: time.Since(start), Attempts: attempt, Last: err}
		}
		if !sleepCtx(ctx, min(pause, time.Until(deadline))) {
			return &PollError{Waited: time.Since(start), Attempts: attempt, Last: err, Canceled: true}
		}
		pause = min(pause*2, pollMax)
	}
}

// PollError is the error of a condition that did not hold in time.
type PollError struct {
	Waited   time.Duration
	Attempts int
	Last     error
	Canceled bool // the context ended before the timeout
}

func (e *PollError) Error() string {
	why := "condition not met"
	if e.Canceled {
		why = "canceled while waiting"
	}
	return why + " after " + e.Waited.Round(time.Millisecond).String() + " (" + strconv.Itoa(e.Attempts) + " checks): " + e.Last.Error()
}

func (e *PollError) Unwrap() error { return e.Last }

func callCheck(ctx context.Context, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return check(ctx)
}

// sleepCtx pauses for d; it returns false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
