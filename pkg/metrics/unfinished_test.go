package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestUnfinishedWorkGrowsWhileASimulationRunsAndGoesAfter steps a fake
// clock under a running simulation and checks its series follows, then
// disappears once the simulation ends.
func TestUnfinishedWorkGrowsWhileASimulationRunsAndGoesAfter(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	done := StartUnfinishedWork(clk, "test-controller")
	for step := 1; step <= 3; step++ {
		deadline := time.Now().Add(5 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the simulation's updater never waited on the clock")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		deadline = time.Now().Add(5 * time.Second)
		for testutil.ToFloat64(SchedulerUnfinishedWork) != float64(step) {
			if time.Now().After(deadline) {
				t.Fatalf("after %d s the gauge reads %v", step, testutil.ToFloat64(SchedulerUnfinishedWork))
			}
			time.Sleep(time.Millisecond)
		}
	}
	done()
	if n := testutil.CollectAndCount(SchedulerUnfinishedWork); n != 0 {
		t.Errorf("%d series left after the simulation ended, want 0", n)
	}
}
