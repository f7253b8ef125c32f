package lifecycle

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;patch;update

// maxRecordedMessage bounds a failure message kept in the NodePool's
// annotation (the events carry it whole).
const maxRecordedMessage = 1024

// recordFailure notes on nc's NodePool (launchhealth) that nc failed to
// register or initialise within ttl, starting or lengthening the back-off
// of its scope, and says so in an event on the NodePool. A NodePool that
// is gone needs no record.
func (c *Controller) recordFailure(ctx context.Context, nc *v1.NodeClaim, phase launchhealth.Phase, reason, msg string, ttl time.Duration) {
	pool := nc.Labels[v1.LabelNodePool]
	if pool == "" {
		return
	}
	if len(msg) > maxRecordedMessage {
		msg = msg[:maxRecordedMessage] + "..."
	}
	failure := launchhealth.Failure{
		NodeClaim: nc.Name, Phase: phase, Reason: reason, Message: msg,
		Time:     metav1.NewTime(c.opts.Clock.Now().UTC().Truncate(time.Second)),
		Launched: nc.CreationTimestamp,
	}
	scope := failureScope(nc, phase)
	var (
		backoff launchhealth.Backoff
		np      *v1.NodePool
	)
	err := c.updateRecord(ctx, pool, func(r *launchhealth.Record) bool {
		backoff = r.Failed(failure, scope, nc.Annotations[v1.AnnotationNodePoolHash], ttl, c.opts.LaunchBackoffMax)
		return true
	}, &np)
	if err != nil {
		log.FromContext(ctx).Error(err, "recording launch failure on nodepool")
		return
	}
	if np == nil {
		return
	}
	metrics.NodePoolLaunchBackoffs.WithLabelValues(pool, string(phase)).Inc()
	next := backoff.RetryAfter.UTC().Format(time.RFC3339)
	evts := []events.Event{events.Warning(np, events.LaunchBackoff, "Launch",
		"NodePool %s: %d consecutive round(s) of NodeClaims of %s failed to %s (%s; last nodeclaim/%s); the next launch of it waits %s, until %s. Other instance types and NodePools are used meanwhile.",
		pool, backoff.Failures, backoff.What(), phaseVerb(phase), reason, nc.Name, backoff.Wait.Duration, next)}
	// The pods that waited for nc hear which NodePool failed, why, and when
	// it tries again; the provisioner plans them elsewhere meanwhile.
	for _, pod := range c.pendingNominatedPods(ctx, nc) {
		evts = append(evts, events.Warning(pod, events.LaunchBackoff, "Provision",
			"Pod was nominated to nodeclaim/%s of nodepool %s, which failed to %s (%s); nodepool %s backs off %s until %s, and joiner plans the pod on other instance types or NodePools meanwhile.",
			nc.Name, pool, phaseVerb(phase), reason, pool, backoff.What(), next))
	}
	c.opts.Recorder.Publish(evts...)
}

// recordSuccess notes on nc's NodePool that nc initialised, which ends the
// back-off of its scope. The write is skipped when it would change nothing
// (the last outcomes all succeeded and nothing backs off), so a large
// scale-up does not patch its NodePool once per node.
func (c *Controller) recordSuccess(ctx context.Context, nc *v1.NodeClaim) {
	pool := nc.Labels[v1.LabelNodePool]
	if pool == "" {
		return
	}
	change := func(r *launchhealth.Record) bool {
		before := len(r.Backoffs)
		if healthy, known := r.Healthy(); known && healthy && len(r.Outcomes) == launchhealth.Outcomes && allTrue(r.Outcomes) {
			r.Succeeded(nc.Spec.NodeClassRef.Name, nc.Labels[v1.LabelInstanceType])
			return len(r.Backoffs) != before
		}
		r.Succeeded(nc.Spec.NodeClassRef.Name, nc.Labels[v1.LabelInstanceType])
		return true
	}
	// The cached NodePool answers the common case, a healthy record that
	// this success would not change, without a read from the API server
	// per initialised node. A failure recorded within the cache's delay
	// before this success keeps its back-off until the NodePool's next
	// success or the back-off's end.
	if np := (&v1.NodePool{}); c.opts.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
		if r, err := launchhealth.Get(np); err == nil && !change(&r) {
			return
		}
	}
	err := c.updateRecord(ctx, pool, change, nil)
	if err != nil {
		log.FromContext(ctx).Error(err, "recording launch success on nodepool")
	}
}

// updateRecord applies change to the launch health record of NodePool
// pool and patches it with optimistic locking, retrying on conflict from a
// fresh read. change reports whether it changed anything. The patched
// NodePool is stored in *out when out is not nil (nil when it is gone).
func (c *Controller) updateRecord(ctx context.Context, pool string, change func(*launchhealth.Record) bool, out **v1.NodePool) error {
	var reader client.Reader = c.opts.Client
	if c.opts.APIReader != nil {
		reader = c.opts.APIReader
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &v1.NodePool{}
		if err := reader.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return client.IgnoreNotFound(err)
		}
		r, err := launchhealth.Get(np)
		if err != nil {
			// An unreadable record is replaced: it cannot be extended.
			log.FromContext(ctx).Error(err, "replacing launch health record")
		}
		if !change(&r) {
			return nil
		}
		stored := np.DeepCopy()
		launchhealth.Set(np, r)
		if err := c.opts.Client.Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching launch health of nodepool %s: %w", pool, err)
		}
		if out != nil {
			*out = np
		}
		return nil
	})
}

// failureScope is what a failure of nc backs off: for a Node that never
// registered, every instance type of its node class (see launchhealth);
// for a Node that never initialised, its instance type with its image.
func failureScope(nc *v1.NodeClaim, phase launchhealth.Phase) launchhealth.Scope {
	s := launchhealth.Scope{NodeClass: nc.Spec.NodeClassRef.Name}
	if phase == launchhealth.PhaseInitialization {
		s.InstanceType, s.ImageID = nc.Labels[v1.LabelInstanceType], nc.Status.ImageID
	}
	return s
}

func phaseVerb(p launchhealth.Phase) string {
	if p == launchhealth.PhaseInitialization {
		return "initialise"
	}
	return "register"
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
