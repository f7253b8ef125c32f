package readiness

import (
	"context"
	"fmt"
	"k8s.io/klog/v2"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// NodeRegistrationHealthy reasons.
const (
	ReasonRegistrationFailed   = "RegistrationFailed"
	ReasonInitializationFailed = "InitializationFailed"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;patch;update

// registrationHealth keeps np's launch health record current and sets
// NodeRegistrationHealthy from it, as Karpenter does: Unknown until a
// launch ends, False while at least half of the last outcomes failed
// (with the last failure's cause), True otherwise. A new generation of the
// node class resets the record (outcomes and back-offs), and back-offs
// made under another template hash or node class are dropped: a change is
// a fresh start. nodeClass is the referenced node class (nil when absent).
// It returns when the earliest active back-off ends, to refresh the gauge.
func (c *Controller) registrationHealth(ctx context.Context, np *v1.NodePool, nodeClass client.Object) (time.Duration, error) {
	conds := np.StatusConditions().WithClock(c.opts.Clock)
	record, err := launchhealth.Get(np)
	if err != nil {
		log.FromContext(ctx).Error(err, "replacing unreadable launch health record", logging.NodePool, klog.KObj(np))
	}
	changed := err != nil
	if nodeClass != nil {
		gen := nodeClass.GetGeneration()
		if np.Status.NodeClassObservedGeneration != 0 && np.Status.NodeClassObservedGeneration != gen {
			record, changed = launchhealth.Record{}, true
			conds.SetUnknown(v1.ConditionTypeNodeRegistrationHealthy)
		}
		np.Status.NodeClassObservedGeneration = gen
	}
	nodeClassName := ""
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		nodeClassName = ref.Name
	}
	if record.Prune(np.Hash(), nodeClassName) {
		changed = true
	}
	if changed {
		// Patched on a copy: the response would overwrite the status
		// conditions this reconcile already set on np.
		base, patched := np.DeepCopy(), np.DeepCopy()
		launchhealth.Set(patched, record)
		if err := c.opts.Client.Patch(ctx, patched, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return 0, fmt.Errorf("resetting launch health of nodepool %s: %w", np.Name, err)
		}
		np.Annotations, np.ResourceVersion = patched.Annotations, patched.ResourceVersion
	}

	healthy, known := record.Healthy()
	switch {
	case !known:
		if conds.Get(v1.ConditionTypeNodeRegistrationHealthy) == nil {
			conds.SetUnknown(v1.ConditionTypeNodeRegistrationHealthy)
		}
	case healthy:
		conds.SetTrue(v1.ConditionTypeNodeRegistrationHealthy)
	default:
		conds.SetFalse(v1.ConditionTypeNodeRegistrationHealthy, unhealthyReason(record), unhealthyMessage(record, c.opts.Clock.Now()))
	}

	active := record.Active(c.opts.Clock.Now(), np.Hash())
	var longest time.Duration
	for _, b := range active {
		longest = max(longest, b.Wait.Duration)
	}
	metrics.NodePoolLaunchBackoffSeconds.WithLabelValues(np.Name).Set(longest.Seconds())
	if len(active) > 0 {
		return active[0].RetryAfter.Sub(c.opts.Clock.Now()), nil
	}
	return 0, nil
}

func unhealthyReason(r launchhealth.Record) string {
	if r.LastFailure != nil && r.LastFailure.Phase == launchhealth.PhaseInitialization {
		return ReasonInitializationFailed
	}
	return ReasonRegistrationFailed
}

// unhealthyMessage says how many of the last launches failed, the last
// failure's cause, and what is backing off until when.
func unhealthyMessage(r launchhealth.Record, now time.Time) string {
	failed := 0
	for _, ok := range r.Outcomes {
		if !ok {
			failed++
		}
	}
	msg := fmt.Sprintf("%d of the last %d launched NodeClaims failed", failed, len(r.Outcomes))
	if f := r.LastFailure; f != nil {
		msg += fmt.Sprintf("; the last, nodeclaim/%s, did not %s (%s) at %s: %s", f.NodeClaim, phaseVerb(f.Phase), f.Reason, f.Time.UTC().Format(time.RFC3339), f.Message)
	}
	backingOff := false
	for _, b := range r.Backoffs {
		if now.Before(b.RetryAfter.Time) {
			msg += fmt.Sprintf(" Backing off %s after %d consecutive failure(s) until %s.", b.What(), b.Failures, b.RetryAfter.UTC().Format(time.RFC3339))
			backingOff = true
		}
	}
	if backingOff {
		msg += " " + RetryNow
	}
	return msg
}

// RetryNow says how to end a back-off once its cause is fixed: every
// change that can fix a launch failure resets it.
const RetryNow = "To retry now, fix the cause: a change to the node class (a new generation), to the NodePool's template, or to kube-system/aws-auth (for a registration failure) ends the back-off at once; so does removing the NodePool's annotation " + v1.AnnotationLaunchHealth + "."

func phaseVerb(p launchhealth.Phase) string {
	if p == launchhealth.PhaseInitialization {
		return "initialize"
	}
	return "register"
}
