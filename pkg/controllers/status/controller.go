// Package status publishes the status condition and termination metrics
// Karpenter gets from awslabs/operatorpkg's status controller, one set per
// kind (operator_nodeclaim_status_condition_count, ...): which conditions
// each object has now and for how long, the transitions seen between two
// reconciles, and how long deleted objects take to go. It reads objects
// and decides nothing.
package status

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Options configure one kind's controller.
type Options struct {
	Client client.Client
	Clock  clock.PassiveClock
	// Object returns an empty object of the kind.
	Object func() client.Object
	// Metrics are the kind's metrics.
	Metrics *metrics.StatusMetrics
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims;nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Controller publishes one kind's status metrics. What each object had at
// its last reconcile (its conditions, to see transitions; its deletion
// time, to observe its termination once it is gone) is kept by the kind's
// metrics.ObjectStatus, which computes the gauges from it.
type Controller struct {
	opts Options
}

// NewController validates opts.
func NewController(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if opts.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if opts.Object == nil || opts.Metrics == nil {
		errs = append(errs, errors.New("object kind and its metrics are required"))
	} else if _, ok := conditionsOf(opts.Object()); !ok {
		errs = append(errs, fmt.Errorf("%T has no status conditions", opts.Object()))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	opts.Metrics.Objects.SetClock(opts.Clock)
	return &Controller{opts: opts}, nil
}

// Register adds the controller to the manager.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named("status." + c.opts.Metrics.Kind).
		For(c.opts.Object()).
		Complete(c)
}

// conditionsOf reads an object's conditions: the API types' GetConditions,
// a CapacityBuffer's (upstream's type, read as it is), or a Node's, which
// are not metav1.Conditions.
func conditionsOf(o client.Object) ([]metav1.Condition, bool) {
	switch o := o.(type) {
	case interface{ GetConditions() []metav1.Condition }:
		return o.GetConditions(), true
	case *autoscalingv1beta1.CapacityBuffer:
		return o.Status.Conditions, true
	case *corev1.Node:
		out := make([]metav1.Condition, 0, len(o.Status.Conditions))
		for _, nc := range o.Status.Conditions {
			out = append(out, metav1.Condition{Type: string(nc.Type), Status: metav1.ConditionStatus(nc.Status), Reason: nc.Reason, LastTransitionTime: nc.LastTransitionTime})
		}
		return out, true
	}
	return nil, false
}

// Reconcile publishes one object's metrics.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := c.opts.Metrics
	obj := c.opts.Object()
	// Read only: the cache's object, not a deep copy of every NodeClaim,
	// Node and NodePool. The metrics keep its conditions, which nobody
	// changes (an update replaces the object).
	if err := c.opts.Client.Get(ctx, req.NamespacedName, obj, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting %s %s: %w", m.Kind, req.Name, err)
		}
		c.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	current, _ := conditionsOf(obj)
	// The gauges are computed when scraped, from what the object has now:
	// nothing to requeue to keep them fresh.
	previous := m.Objects.Set(req.NamespacedName, current, obj.GetDeletionTimestamp())
	// Transitions are those seen between two reconciles: a condition that
	// flips and flips back in between is missed, as in operatorpkg.
	for _, cond := range current {
		before := meta.FindStatusCondition(previous, cond.Type)
		if before != nil && before.Status == cond.Status {
			continue
		}
		m.ConditionTransitions.WithLabelValues(cond.Type, string(cond.Status), cond.Reason).Inc()
		if before != nil {
			m.ConditionTransitionSeconds.WithLabelValues(cond.Type, string(before.Status), string(cond.Status)).
				Observe(cond.LastTransitionTime.Sub(before.LastTransitionTime.Time).Seconds())
		}
	}
	return reconcile.Result{}, nil
}

// forget drops a gone object's series and observes its termination.
func (c *Controller) forget(key types.NamespacedName) {
	if deleted := c.opts.Metrics.Objects.Delete(key); deleted != nil {
		c.opts.Metrics.TerminationDuration.Observe(c.opts.Clock.Since(deleted.Time).Seconds())
	}
}
