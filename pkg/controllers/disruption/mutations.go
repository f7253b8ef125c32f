package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/optimistic"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
)

// Every write here reads the object from the API server itself, changes it
// and patches it under optimistic locking (taints and conditions are lists,
// and a plain merge patch would drop another writer's entries); a write
// that conflicts is recomputed on a fresh copy (optimistic.Patch). These
// writes are a few per command, so the read costs little, and deciding
// from the cache would be wrong both ways: a cache behind a Node's
// heartbeats conflicts on every retry, and one that has not yet shown the
// taint a command just wrote would find nothing to remove on a roll-back,
// leaving the candidate tainted until the next pass's clean-up.

// taint adds karpenter.sh/disrupted:NoSchedule to the node, so nothing
// new lands on a candidate while its command is in flight.
func taint(ctx context.Context, c client.Client, api client.Reader, name string) error {
	return patchNode(ctx, c, api, name, func(n *corev1.Node) bool {
		if n.DeletionTimestamp != nil || v1.HasDisruptedTaint(n.Spec.Taints) {
			return false
		}
		n.Spec.Taints = append(n.Spec.Taints, v1.DisruptedNoScheduleTaint)
		return true
	})
}

// untaint removes the disrupted taint from a node that is not being
// deleted (node termination owns the taint of a deleting node).
func untaint(ctx context.Context, c client.Client, api client.Reader, name string) error {
	return patchNode(ctx, c, api, name, func(n *corev1.Node) bool {
		if n.DeletionTimestamp != nil {
			return false
		}
		kept := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if !t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return false
		}
		n.Spec.Taints = kept
		return true
	})
}

func patchNode(ctx context.Context, c client.Client, api client.Reader, name string, mutate func(*corev1.Node) bool) error {
	n := &corev1.Node{}
	err := api.Get(ctx, types.NamespacedName{Name: name}, n)
	if err == nil {
		_, err = optimistic.Patch(ctx, api, n, mutate, func(n *corev1.Node, p client.Patch) error {
			return c.Patch(ctx, n, p)
		})
	}
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating taints of node %s: %w", name, err)
	}
	return nil
}

// setDisruptionReason records on a candidate's NodeClaim why it is being
// disrupted (Karpenter's DisruptionReason condition).
func setDisruptionReason(ctx context.Context, c client.Client, api client.Reader, name string, cmd *disruption.Command, now time.Time) error {
	return patchNodeClaimStatus(ctx, c, api, name, func(nc *v1.NodeClaim) bool {
		return nc.StatusConditions().At(now).SetTrueWithReason(v1.ConditionTypeDisruptionReason, string(cmd.Reason), describe(cmd))
	})
}

// clearDisruptionReason removes the condition when a command is abandoned.
func clearDisruptionReason(ctx context.Context, c client.Client, api client.Reader, name string) error {
	return patchNodeClaimStatus(ctx, c, api, name, func(nc *v1.NodeClaim) bool {
		if nc.DeletionTimestamp != nil {
			return false
		}
		return nc.StatusConditions().Clear(v1.ConditionTypeDisruptionReason)
	})
}

func patchNodeClaimStatus(ctx context.Context, c client.Client, api client.Reader, name string, mutate func(*v1.NodeClaim) bool) error {
	nc := &v1.NodeClaim{}
	err := api.Get(ctx, types.NamespacedName{Name: name}, nc)
	if err == nil {
		_, err = optimistic.Patch(ctx, api, nc, mutate, func(nc *v1.NodeClaim, p client.Patch) error {
			return c.Status().Patch(ctx, nc, p)
		})
	}
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("updating %s of nodeclaim %s: %w", v1.ConditionTypeDisruptionReason, name, err)
	}
	return nil
}

// ConditionTypeDriftHalted is joiner's NodePool condition for safe drift:
// True while drift is stopped for the pool because the replacements of a
// drifted node failed to initialise.
const ConditionTypeDriftHalted = "DriftHalted"

// ReasonReplacementFailed is the DriftHalted reason.
const ReasonReplacementFailed = "ReplacementFailed"

// haltDrift sets DriftHalted on the NodePool and says so in an event.
func haltDrift(ctx context.Context, opts *Options, pool, why string) error {
	now := opts.Clock.Now()
	msg := fmt.Sprintf("drift stopped: %s; the drifted nodes keep running. Drift resumes when the NodePool changes (fix the template or node class) or after %s", why, opts.DriftHaltDuration)
	np := &v1.NodePool{}
	err := opts.APIReader.Get(ctx, types.NamespacedName{Name: pool}, np)
	if err == nil {
		_, err = optimistic.Patch(ctx, opts.APIReader, np, func(np *v1.NodePool) bool {
			return np.StatusConditions().At(now).SetTrueWithReason(ConditionTypeDriftHalted, ReasonReplacementFailed, msg)
		}, func(np *v1.NodePool, p client.Patch) error {
			return opts.Client.Status().Patch(ctx, np, p)
		})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("setting %s on nodepool %s: %w", ConditionTypeDriftHalted, pool, err)
	}
	opts.Recorder.Publish(events.Warning(np, events.DriftHalted, "Drift", "%s", msg))
	return nil
}

// driftHalted says why drift is halted for np now ("" when it is not),
// and lifts the halt once the NodePool changed since it was set or
// DriftHaltDuration passed.
func (c *Controller) driftHalted(ctx context.Context, np *v1.NodePool, now time.Time) (string, error) {
	cond := np.StatusConditions().Get(ConditionTypeDriftHalted)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return "", nil
	}
	if cond.ObservedGeneration == np.Generation && now.Sub(cond.LastTransitionTime.Time) < c.opts.DriftHaltDuration {
		return cond.Message, nil
	}
	stored := np.DeepCopy()
	np.StatusConditions().Clear(ConditionTypeDriftHalted)
	if err := c.opts.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Still halted until the next pass re-reads it.
			return cond.Message, nil
		}
		return "", fmt.Errorf("resuming drift for nodepool %s: %w", np.Name, err)
	}
	return "", nil
}
