package disruption

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/disruption"
)

// A pass that started a command is followed at once by the next, as
// Karpenter's disruption controller requeues immediately after a command;
// a pass that started none, or failed, waits PollInterval. Upstream's
// performance suite drifts 300 nodes (one node per drift command): one
// command per PollInterval took 50 minutes.
func TestRunGoesOnAtOnceAfterACommand(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	c := &Controller{opts: Options{Clock: clk, PollInterval: 10 * time.Second}}
	type outcome struct {
		command bool
		err     error
	}
	script := []outcome{
		{command: true}, // the first pass waits PollInterval
		{command: true}, // at once
		{},              // at once; started nothing
		{command: true}, // after PollInterval
		{err: errors.New("listing nodes failed")}, // at once
		{command: true}, // after PollInterval: the failed pass started nothing
	}
	var polls atomic.Int32
	var seen []int32
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pass := func(context.Context) (*disruption.Command, error) {
		seen = append(seen, polls.Load())
		if len(seen) > len(script) {
			cancel()
			return nil, nil
		}
		o := script[len(seen)-1]
		if o.command {
			return &disruption.Command{Method: disruption.MethodDrift}, o.err
		}
		return nil, o.err
	}
	done := make(chan struct{})
	go func() {
		c.run(ctx, pass)
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-deadline:
			t.Fatalf("run did not end; passes so far after polls %v", seen)
		default:
			if clk.HasWaiters() {
				polls.Add(1)
				clk.Step(10 * time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// The poll count each pass ran after; the 7th pass ends the run.
	if want := []int32{1, 1, 1, 2, 2, 3, 3}; !slices.Equal(seen, want) {
		t.Errorf("passes ran after polls %v, want %v", seen, want)
	}
}
