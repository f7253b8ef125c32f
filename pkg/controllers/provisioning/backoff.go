package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// launchBackoffs is launchhealth.SolverBackoffs for a batch: an
// unreadable record is logged and read as no back-off, so one bad
// annotation never stops provisioning.
func launchBackoffs(ctx context.Context, np *v1.NodePool, its []*scheduling.InstanceType, now time.Time) ([]scheduling.LaunchBackoff, int64) {
	out, failures, err := launchhealth.SolverBackoffs(np, its, now)
	if err != nil {
		log.FromContext(ctx).Error(err, "ignoring unreadable launch health record", "nodepool", np.Name)
		return nil, 0
	}
	return out, failures
}

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
