package lifecycle

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-dev/joiner/pkg/apis/status"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// liveness deletes a NodeClaim that did not launch within LaunchTTL, whose
// Node did not register within RegistrationTTL, or that did not initialize
// within InitializationTTL of registering, and says why. The clocks start
// at their condition's last transition (Launched and Registered start
// Unknown when the NodeClaim is first reconciled).
func (c *Controller) liveness(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if conds.IsTrue(v1.ConditionTypeRegistered) {
		return c.initializationLiveness(ctx, nc)
	}
	if !conds.IsTrue(v1.ConditionTypeLaunched) {
		launched := conds.Get(v1.ConditionTypeLaunched)
		left := c.opts.LaunchTTL - c.opts.Clock.Since(launched.LastTransitionTime.Time)
		if left > 0 {
			return stepResult{requeueAfter: left}, nil
		}
		msg := fmt.Sprintf("NodeClaim %s did not launch within %s (last attempt: %s: %s); deleting it so the provisioner can try again. Check the cloud's quota, capacity and the node class (kubectl describe %s %s).",
			nc.Name, c.opts.LaunchTTL, launched.Reason, launched.Message, nc.Spec.NodeClassRef.Kind, nc.Spec.NodeClassRef.Name)
		return c.expire(ctx, nc, events.LaunchTimeout, "launch", msg)
	}
	registered := conds.Get(v1.ConditionTypeRegistered)
	left := c.opts.RegistrationTTL - c.opts.Clock.Since(registered.LastTransitionTime.Time)
	if left > 0 {
		return stepResult{requeueAfter: left}, nil
	}
	msg := registrationTimeoutMessage(nc, *registered, c.opts.RegistrationTTL)
	reason := registered.Reason
	if reason == "" || reason == v1.ConditionTypeRegistered || reason == status.ReasonAwaitingReconciliation {
		reason = ReasonNodeNotFound
	}
	// Recorded before the deletion: the provisioner plans the NodeClaim's
	// pods again when it sees it go, and must by then see the back-off
	// (and the failure count that names the relaunch).
	c.recordFailure(ctx, nc, launchhealth.PhaseRegistration, reason, msg, c.opts.RegistrationTTL)
	res, err := c.expire(ctx, nc, events.RegistrationTimeout, "registration", msg)
	if res.deleted {
		metrics.NodeClaimsRegistrationFailed.WithLabelValues(nc.Labels[v1.LabelNodePool]).Inc()
	}
	return res, err
}

// registrationTimeoutMessage explains why nc did not register within ttl,
// from its Registered condition: a Node that never appeared points at the
// instance's bootstrap, a Node that appeared but could not be taken over
// points at what stopped joiner.
func registrationTimeoutMessage(nc *v1.NodeClaim, registered metav1.Condition, ttl time.Duration) string {
	instance := fmt.Sprintf("NodeClaim %s launched instance %s (%s, %s)",
		nc.Name, nc.Status.ProviderID, orUnknown(nc.Labels[v1.LabelInstanceType]), orUnknown(nc.Labels[v1.LabelTopologyZone]))
	advice := registrationAdvice(registered)
	switch registered.Reason {
	case ReasonMultipleNodesFound:
		return fmt.Sprintf("%s but it did not register within %s because more than one Node has its providerID: %s. "+
			"joiner is deleting the NodeClaim instead of waiting forever. %s",
			instance, ttl, registered.Message, advice)
	case ReasonNodeSyncFailed:
		return fmt.Sprintf("%s and its Node joined the cluster, but joiner could not take the Node over within %s: %s. "+
			"joiner is deleting the NodeClaim instead of waiting forever. %s",
			instance, ttl, registered.Message, advice)
	case ReasonRegistrationBlocked:
		return fmt.Sprintf("%s but it did not register within %s: %s. joiner is deleting it instead of waiting forever.",
			instance, ttl, registered.Message)
	case ReasonNodeNotFound, "", v1.ConditionTypeRegistered, status.ReasonAwaitingReconciliation:
		return fmt.Sprintf("%s but no Node with that providerID registered within %s, so joiner is deleting it instead of waiting forever. %s",
			instance, ttl, advice)
	default:
		return fmt.Sprintf("%s but it did not register within %s (%s: %s), so joiner is deleting it instead of waiting forever.",
			instance, ttl, registered.Reason, registered.Message)
	}
}

// registrationAdvice is the checklist for a launched NodeClaim whose Node
// has not registered, by its Registered condition's reason ("" when joiner
// has nothing to add). `joiner explain` shows it while the NodeClaim
// waits; the timeout's event repeats it.
func registrationAdvice(registered metav1.Condition) string {
	switch registered.Reason {
	case ReasonMultipleNodesFound:
		return "Delete the extra Node objects, and check that nothing else (another autoscaler, a script) creates Nodes with the same providerID."
	case ReasonNodeSyncFailed:
		return "Check admission webhooks that validate or mutate Nodes (kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations) " +
			"and that joiner's service account may patch nodes (kubectl auth can-i patch nodes --as=system:serviceaccount:<namespace>:<joiner service account>)."
	case ReasonNodeNotFound, "", v1.ConditionTypeRegistered, status.ReasonAwaitingReconciliation:
		return "The instance booted but its kubelet never joined the cluster. Check: the kubelet and bootstrap logs on the instance (journalctl -u kubelet, /var/log/cloud-init-output.log); " +
			"that the node IAM role (not the controller's role) is mapped in the aws-auth ConfigMap or has an EKS access entry (groups system:bootstrappers, system:nodes); " +
			"the node class userData/bootstrap (cluster name, endpoint, CA bundle, --register-with-taints syntax); " +
			"that the AMI architecture matches the instance type (arm64 images for Graviton types such as t4g/m6g, amd64 otherwise); " +
			"and that subnets and security groups let the node reach the API server."
	default:
		return ""
	}
}

// expire publishes the explanation on the NodeClaim and its NodePool,
// deletes the NodeClaim and counts it.
func (c *Controller) expire(ctx context.Context, nc *v1.NodeClaim, reason, phase, msg string) (stepResult, error) {
	pool := nc.Labels[v1.LabelNodePool]
	evts := []events.Event{events.Warning(nc, reason, "Delete", "%s", msg)}
	np := &v1.NodePool{}
	if pool != "" && c.opts.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
		evts = append(evts, events.Warning(np, reason, "Delete", "%s", msg))
	}
	c.opts.Recorder.Publish(evts...)
	log.FromContext(ctx).Info("deleting nodeclaim: liveness timeout", logging.Phase, phase, logging.Reason, reason)
	if err := c.deleteNodeClaim(ctx, nc); err != nil {
		return stepResult{}, err
	}
	metrics.NodeClaimsLivenessExpired.WithLabelValues(pool, phase).Inc()
	return stepResult{deleted: true}, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
