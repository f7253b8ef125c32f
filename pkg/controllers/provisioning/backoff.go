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

// launchBackoffs turns np's launch health record into the solver's input:
// the back-offs still waiting at now under np's current template and node
// class, each with the instance types of its it covers. It also returns the NodePool's failure
// count, which names relaunched NodeClaims.
func launchBackoffs(ctx context.Context, np *v1.NodePool, its []*scheduling.InstanceType, now time.Time) ([]scheduling.LaunchBackoff, int64) {
	record, err := launchhealth.Get(np)
	if err != nil {
		log.FromContext(ctx).Error(err, "ignoring unreadable launch health record", "nodepool", np.Name)
		return nil, 0
	}
	nodeClass := ""
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		nodeClass = ref.Name
	}
	var out []scheduling.LaunchBackoff
	for _, b := range record.Active(now, np.Hash()) {
		if b.NodeClass != nodeClass {
			continue
		}
		lb := scheduling.LaunchBackoff{What: b.What(), Phase: string(b.Phase), Cause: b.Reason, Failures: b.Failures, NextAttempt: b.RetryAfter.Time}
		for _, it := range its {
			if b.Covers(it.Name) {
				lb.InstanceTypes = append(lb.InstanceTypes, it.Name)
			}
		}
		if len(lb.InstanceTypes) > 0 {
			out = append(out, lb)
		}
	}
	return out, record.Failures
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

// backoffTrigger is the batcher key of a back-off's end.
const backoffTrigger = types.UID("launch-backoff")
