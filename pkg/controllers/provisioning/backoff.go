package provisioning

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// earliestRetry is the first NextAttempt among the back-offs that kept a
// pod of the plan waiting (zero when none did).
func earliestRetry(errs []scheduling.PodError) time.Time {
	var first time.Time
	for _, pe := range errs {
		for _, r := range pe.NodePools {
			bo, ok := r.(scheduling.BackingOff)
			if !ok {
				continue
			}
			for _, b := range bo.Backoffs {
				if first.IsZero() || b.NextAttempt.Before(first) {
					first = b.NextAttempt
				}
			}
		}
	}
	return first
}

// retryTimer triggers a batch when the first back-off that keeps pods
// waiting ends, so they are planned again then rather than at the next
// periodic requeue of pending pods.
type retryTimer struct {
	mu   sync.Mutex
	at   time.Time
	stop chan struct{}
}

// wake arranges trigger to run at t (keeping an earlier pending wake-up).
func (r *retryTimer) wake(clk clock.Clock, t time.Time, trigger func()) {
	if t.IsZero() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := clk.Now()
	if r.stop != nil && r.at.After(now) && !r.at.After(t) {
		return
	}
	if r.stop != nil {
		close(r.stop)
	}
	stop := make(chan struct{})
	r.at, r.stop = t, stop
	timer := clk.NewTimer(t.Sub(now))
	go func() {
		select {
		case <-timer.C():
			trigger()
		case <-stop:
			timer.Stop()
		}
	}()
}

// cancel drops the pending wake-up, if any (the provisioner stopped).
func (r *retryTimer) cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		close(r.stop)
		r.stop, r.at = nil, time.Time{}
	}
}

// backoffTrigger is the batcher key of a back-off's end.
const backoffTrigger = types.UID("launch-backoff")
