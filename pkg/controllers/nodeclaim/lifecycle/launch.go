package lifecycle

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// ReasonLaunchFailed is the Launched condition's reason for a failure the
// cloud did not classify.
const ReasonLaunchFailed = "LaunchFailed"

// launch asks the cloud for the NodeClaim's instance and records what it
// returned. A launched NodeClaim (one with a provider ID) is never launched
// again. One whose status patch has not landed yet needs no memory here:
// its UID is Create's client token, so calling Create again returns the
// instance already launched for it (cloudprovider.CloudProvider.Create).
func (c *Controller) launch(ctx context.Context, nc *v1.NodeClaim) (stepResult, error) {
	conds := nc.StatusConditions().WithClock(c.opts.Clock)
	if nc.Status.ProviderID != "" {
		if !conds.IsTrue(v1.ConditionTypeLaunched) {
			conds.SetTrue(v1.ConditionTypeLaunched)
		}
		return stepResult{}, nil
	}
	if group := nc.Annotations[autoscalingv1.AnnotationLaunchGroup]; group != "" {
		// Its ProvisioningRequest launches the whole group at once and
		// removes the annotation when it has; launching it alone now would
		// break the all-or-nothing launch.
		log.FromContext(ctx).V(1).Info("waiting for the launch of its group", logging.Group, group)
		return stepResult{}, nil
	}
	created, err := c.opts.CloudProvider.Create(ctx, nc)
	if err != nil {
		return c.launchFailed(ctx, nc, err)
	}
	metrics.NodeClaimsLaunched.WithLabelValues(nc.Labels[v1.LabelNodePool]).Inc()
	log.FromContext(ctx).Info("launched nodeclaim", logging.ProviderID, created.Status.ProviderID,
		logging.InstanceType, created.Labels[v1.LabelInstanceType], logging.Zone, created.Labels[v1.LabelTopologyZone],
		logging.CapacityType, created.Labels[v1.LabelCapacityType])
	hydrate(nc, created)
	conds.SetTrue(v1.ConditionTypeLaunched)
	return stepResult{}, nil
}

// releaseIfGone handles a failed patch of a NodeClaim whose launched
// instance (nc's provider ID) was not recorded yet. Termination runs
// separately: if it removed the finalizer of a NodeClaim it saw without a
// provider ID, or will, the instance has no owner and would run until
// garbage collection. When the patch failed because the NodeClaim is gone,
// or a fresh read shows it gone or deleting, the instance is deleted now and
// released reports true.
func (c *Controller) releaseIfGone(ctx context.Context, stored, nc *v1.NodeClaim, patchErr error) (released bool, err error) {
	if stored.Status.ProviderID != "" || nc.Status.ProviderID == "" {
		return false, nil
	}
	if !apierrors.IsNotFound(patchErr) {
		current := &v1.NodeClaim{}
		err := c.opts.Client.Get(ctx, client.ObjectKeyFromObject(nc), current)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, nil
		case current.UID != nc.UID, current.DeletionTimestamp != nil && current.Status.ProviderID == "":
		default:
			return false, nil
		}
	}
	return true, c.releaseUnrecorded(ctx, nc, nc)
}

// releaseDeleting handles a deleting NodeClaim without a provider ID that
// this controller may have launched (it carries the termination finalizer,
// which the provisioner creates it with and this controller otherwise adds
// before launching): termination cannot see an instance
// whose provider ID was never recorded, so the cloud's own list is asked
// for the instance launched with the NodeClaim's UID, which is deleted.
func (c *Controller) releaseDeleting(ctx context.Context, nc *v1.NodeClaim) error {
	if nc.Status.ProviderID != "" || nc.UID == "" || !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return nil
	}
	instances, err := c.opts.CloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances for deleting nodeclaim %s: %w", nc.Name, err)
	}
	for _, inst := range instances {
		if inst.UID == nc.UID {
			return c.releaseUnrecorded(ctx, nc, inst)
		}
	}
	return nil
}

// releaseUnrecorded deletes created, the instance launched for nc, which is
// gone or deleting without the instance's provider ID on record.
func (c *Controller) releaseUnrecorded(ctx context.Context, nc, created *v1.NodeClaim) error {
	log.FromContext(ctx).Info("deleting instance launched for a nodeclaim that was deleted before recording it",
		logging.ProviderID, created.Status.ProviderID)
	if err := c.opts.CloudProvider.Delete(ctx, created); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		return fmt.Errorf("deleting instance %s launched for deleted nodeclaim %s: %w", created.Status.ProviderID, nc.Name, err)
	}
	return nil
}

// cloudOwnedLabels describe the launched machine, so only the cloud knows
// them: hydrate takes them from what Create returned even when the
// NodeClaim already has a value.
var cloudOwnedLabels = map[string]bool{
	v1.LabelInstanceType: true, v1.LabelTopologyZone: true, v1.LabelCapacityType: true,
	v1.LabelArch: true, v1.LabelOS: true, v1.LabelTopologyRegion: true,
}

// hydrate copies what the cloud returned into nc. The NodeClaim's own
// labels (from the user and the NodePool template) win over the cloud's for
// keys both set, except cloudOwnedLabels.
func hydrate(nc, created *v1.NodeClaim) {
	nc.Status.ProviderID = created.Status.ProviderID
	nc.Status.ImageID = created.Status.ImageID
	nc.Status.Capacity = created.Status.Capacity.DeepCopy()
	nc.Status.Allocatable = created.Status.Allocatable.DeepCopy()
	if len(created.Labels) > 0 && nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range created.Labels {
		if _, has := nc.Labels[k]; has && !cloudOwnedLabels[k] {
			continue
		}
		nc.Labels[k] = v
	}
	if len(created.Annotations) > 0 && nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	for k, v := range created.Annotations {
		nc.Annotations[k] = v
	}
}

// launchFailed handles a Create error: capacity and node class problems
// delete the NodeClaim so the provisioner plans again without it; anything
// else is shown on the Launched condition and retried with backoff until
// liveness gives up.
func (c *Controller) launchFailed(ctx context.Context, nc *v1.NodeClaim, err error) (stepResult, error) {
	pool := nc.Labels[v1.LabelNodePool]
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		c.opts.Recorder.Publish(events.Warning(nc, events.InsufficientCapacityError, "Launch",
			"NodeClaim %s could not be launched: %v. Deleting it so the provisioner retries with other instance types, zones or capacity types.", nc.Name, err))
		log.FromContext(ctx).Info("deleting nodeclaim: insufficient capacity", logging.Error, err.Error())
		if derr := c.deleteNodeClaim(ctx, nc); derr != nil {
			return stepResult{}, derr
		}
		metrics.NodeClaimsLaunchFailed.WithLabelValues(pool, "insufficient_capacity").Inc()
		return stepResult{deleted: true}, nil
	case cloudprovider.IsNodeClassNotReadyError(err):
		c.opts.Recorder.Publish(events.Warning(nc, events.NodeClassNotReady, "Launch",
			"NodeClaim %s could not be launched because its node class %s/%s is not ready: %v. Deleting it; fix the node class (kubectl describe %s %s) and the provisioner will try again.",
			nc.Name, nc.Spec.NodeClassRef.Kind, nc.Spec.NodeClassRef.Name, err, nc.Spec.NodeClassRef.Kind, nc.Spec.NodeClassRef.Name))
		log.FromContext(ctx).Info("deleting nodeclaim: node class not ready", logging.Error, err.Error())
		if derr := c.deleteNodeClaim(ctx, nc); derr != nil {
			return stepResult{}, derr
		}
		metrics.NodeClaimsLaunchFailed.WithLabelValues(pool, "nodeclass_not_ready").Inc()
		return stepResult{deleted: true}, nil
	}
	reason, message := ReasonLaunchFailed, err.Error()
	if ce := cloudprovider.AsCreateError(err); ce != nil {
		reason, message = ce.ConditionReason, ce.ConditionMessage
	}
	nc.StatusConditions().WithClock(c.opts.Clock).SetUnknownWithReason(v1.ConditionTypeLaunched, reason, message)
	c.opts.Recorder.Publish(events.Warning(nc, events.LaunchFailed, "Launch", "NodeClaim %s failed to launch (%s): %s", nc.Name, reason, message))
	return stepResult{}, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
}
