package metrics

import (
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"
)

// unfinishedWorkInterval is how often a running simulation's
// karpenter_scheduler_unfinished_work_seconds is brought up to date.
const unfinishedWorkInterval = time.Second

// StartUnfinishedWork publishes how long one scheduling simulation of
// controller has been running, every second until the returned function is
// called, which removes the series. A simulation that hangs shows here
// long before scheduling_duration_seconds sees it.
func StartUnfinishedWork(clk clock.Clock, controller string) (done func()) {
	id := string(uuid.NewUUID())
	g := SchedulerUnfinishedWork.WithLabelValues(controller, id)
	start := clk.Now()
	g.Set(0)
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-stop:
				return
			case <-clk.After(unfinishedWorkInterval):
				g.Set(clk.Since(start).Seconds())
			}
		}
	}()
	return func() {
		close(stop)
		<-finished
		SchedulerUnfinishedWork.DeleteLabelValues(controller, id)
	}
}
