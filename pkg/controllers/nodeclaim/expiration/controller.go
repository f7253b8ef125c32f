// Package expiration deletes a NodeClaim once it has lived for its
// spec.expireAfter (measured from its creation), as Karpenter's forceful
// expiration does: no budget, do-not-disrupt annotation or replacement is
// waited for. The deletion goes through the ordinary termination path, so
// the node is drained (PDBs respected) until the NodeClaim's
// terminationGracePeriod runs out. A NodePool's expireAfter reaches only
// NodeClaims launched after it changed (the change makes older ones
// drift); "Never" disables expiry.
package expiration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Options configure the expiration controller.
type Options struct {
	// Client reads from the cache and deletes NodeClaims (required).
	Client client.Client
	// CloudProvider names the node class kinds joiner manages (required).
	CloudProvider cloudprovider.CloudProvider
	// Recorder publishes the Expired event (required).
	Recorder events.Recorder
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
}

// Controller is nodeclaim.expiration.
type Controller struct {
	opts        Options
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if opts.CloudProvider == nil {
		errs = append(errs, errors.New("CloudProvider is required"))
	}
	if opts.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("nodeclaim expiration options: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds nodeclaim.expiration to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("nodeclaim.expiration").
		For(&v1.NodeClaim{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering nodeclaim.expiration: %w", err)
	}
	return nil
}

// ExpiresAt is when nc expires: its creation plus spec.expireAfter. ok is
// false when it never does (Never, or no expireAfter at all).
func ExpiresAt(nc *v1.NodeClaim) (at time.Time, ok bool) {
	d := nc.Spec.ExpireAfter
	if d.IsZero() || d.IsNever() || nc.CreationTimestamp.IsZero() {
		return time.Time{}, false
	}
	return nc.CreationTimestamp.Add(*d.Duration), true
}

// Reconcile deletes nc once it expired, or asks to look again then.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.nodeClasses.Manages(nc.Spec.NodeClassRef) || !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	at, ok := ExpiresAt(nc)
	if !ok {
		return reconcile.Result{}, nil
	}
	if left := at.Sub(c.opts.Clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	// Delete only the object read above: a NodeClaim recreated under the
	// same name is not the one that expired.
	if err := c.opts.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID, ResourceVersion: &nc.ResourceVersion}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim %s: %w", nc.Name, err))
	}
	pool := nc.Labels[v1.LabelNodePool]
	metrics.NodeClaimsDisrupted.WithLabelValues(metrics.DisruptionReasonExpired, pool, nc.Labels[v1.LabelCapacityType]).Inc()
	msg := fmt.Sprintf("NodeClaim %s expired: it was created %s ago and its expireAfter is %s; deleting it (its node is drained, within terminationGracePeriod %s)",
		nc.Name, c.opts.Clock.Since(nc.CreationTimestamp.Time).Round(time.Second), *nc.Spec.ExpireAfter.Duration, gracePeriod(nc))
	c.opts.Recorder.Publish(events.Normal(nc, events.Expired, "Delete", "%s", msg))
	log.FromContext(ctx).Info("deleting expired nodeclaim", logging.NodeClaim, klog.KObj(nc), logging.NodePool, klog.KRef("", pool), logging.Node, klog.KRef("", nc.Status.NodeName))
	return reconcile.Result{}, nil
}

func gracePeriod(nc *v1.NodeClaim) string {
	if nc.Spec.TerminationGracePeriod == nil {
		return "unset: PDBs and do-not-disrupt pods may hold it"
	}
	return nc.Spec.TerminationGracePeriod.Duration.String()
}
