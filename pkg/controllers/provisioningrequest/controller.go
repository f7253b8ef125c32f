package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/gang"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// Defaults, as Cluster Autoscaler's.
const (
	// DefaultBookingTTL is how long provisioned capacity is held for the
	// request's pods (Cluster Autoscaler: 10 minutes).
	DefaultBookingTTL = 10 * time.Minute
	// DefaultLaunchTTL is how long the NodeClaims of a request launched one
	// by one may take to all launch before the request is rolled back.
	DefaultLaunchTTL = 5 * time.Minute
	// DefaultRetryBase is the first back-off after a request could not be
	// met; it doubles per failure up to maxRetry.
	DefaultRetryBase = 10 * time.Second
	maxRetry         = 5 * time.Minute
)

// Condition reasons (Cluster Autoscaler's where it has one).
const (
	ReasonAccepted           = "Accepted"
	ReasonProvisioned        = "Provisioned"
	ReasonCapacityIsFound    = "CapacityIsFound"
	ReasonCapacityIsNotFound = "CapacityIsNotFound"
	ReasonLaunchRolledBack   = "LaunchRolledBack"
	ReasonInvalidRequest     = "InvalidRequest"
	ReasonExpired            = "Expired"
	ReasonBookingExpired     = "BookingExpired"
	ReasonCapacityRevoked    = "CapacityRevoked"
)

// detailNodeClaims is the provisioningClassDetails key listing the
// NodeClaims launched for the request (comma-separated).
const detailNodeClaims = "nodeClaims"

// Planner is the part of the provisioner a request needs: plan its pods
// as one unit, and create the planned NodeClaims all or none
// (provisioning.Provisioner).
type Planner interface {
	PlanGang(ctx context.Context, pods []*corev1.Pod, existingOnly bool) (*livemodel.Gang, error)
	CreateGang(ctx context.Context, g *livemodel.Gang, mutate func(*v1.NodeClaim)) ([]*v1.NodeClaim, error)
}

// Options configure the controller.
type Options struct {
	Client client.Client
	// APIReader reads the request and its NodeClaims past the cache: a
	// NodeClaim created a moment ago and not yet in the cache must not look
	// failed (which would roll the whole gang back), nor one deleted a
	// moment ago look live (which would launch it).
	APIReader     client.Reader
	Planner       Planner
	CloudProvider cloudprovider.CloudProvider
	// Bookings is shared with the provisioner (its Options.Bookings).
	Bookings *Bookings
	Recorder events.Recorder
	Clock    clock.Clock
	// BookingTTL, LaunchTTL and RetryBase default to DefaultBookingTTL,
	// DefaultLaunchTTL and DefaultRetryBase.
	BookingTTL time.Duration
	LaunchTTL  time.Duration
	RetryBase  time.Duration
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.APIReader == nil {
		errs = append(errs, errors.New("API reader is required"))
	}
	if o.Planner == nil {
		errs = append(errs, errors.New("planner is required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("cloud provider is required"))
	}
	if o.Bookings == nil {
		errs = append(errs, errors.New("bookings are required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("event recorder is required"))
	}
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	return errors.Join(errs...)
}

// Controller reconciles ProvisioningRequests of the classes joiner serves.
type Controller struct {
	opts Options
	// retry is each request's back-off after failed attempts.
	retry *backoff
}

// NewController validates opts and returns a Controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("provisioningrequest options: %w", err)
	}
	if opts.BookingTTL <= 0 {
		opts.BookingTTL = DefaultBookingTTL
	}
	if opts.LaunchTTL <= 0 {
		opts.LaunchTTL = DefaultLaunchTTL
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = DefaultRetryBase
	}
	return &Controller{opts: opts, retry: newBackoff(opts.RetryBase, maxRetry)}, nil
}

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch

// Register adds provisioningrequest to mgr, watching the requests, their
// NodeClaims and the pods that consume them.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("provisioningrequest").
		For(&autoscalingv1.ProvisioningRequest{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return requestOf(o.GetAnnotations()[autoscalingv1.AnnotationProvisioningRequest])
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetAnnotations()[autoscalingv1.AnnotationConsumeProvisioningRequest]; name != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		Complete(reconcile.Func(c.Reconcile))
	if err != nil {
		return fmt.Errorf("registering provisioningrequest: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(c.listAtStart)); err != nil {
		return fmt.Errorf("registering provisioningrequest: %w", err)
	}
	return nil
}

// listAtStart tells the bookings which requests exist as joiner starts
// (as leader), so Bookings.Synced waits for each to be reconciled once and
// its booking held again. Without the CRD there is nothing to restore.
func (c *Controller) listAtStart(ctx context.Context) error {
	for {
		var list autoscalingv1.ProvisioningRequestList
		err := c.opts.APIReader.List(ctx, &list)
		if err == nil || meta.IsNoMatchError(err) {
			keys := make([]types.NamespacedName, 0, len(list.Items))
			for i := range list.Items {
				if gang.Served(list.Items[i].Spec.ProvisioningClassName) {
					keys = append(keys, client.ObjectKeyFromObject(&list.Items[i]))
				}
			}
			c.opts.Bookings.restoring(keys)
			return nil
		}
		log.FromContext(ctx).Error(err, "listing provisioningrequests to restore their bookings")
		select {
		case <-ctx.Done():
			return nil
		case <-c.opts.Clock.After(time.Second):
		}
	}
}

// requestOf parses a namespace/name annotation value.
func requestOf(v string) []reconcile.Request {
	for i := range len(v) {
		if v[i] == '/' {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: v[:i], Name: v[i+1:]}}}
		}
	}
	return nil
}

// Reconcile moves one request through its phases: accept, provision (plan,
// create, launch, or roll back and retry), then hold the booking until its
// pods came or it expired. Its status is patched once.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Once reconciled, whatever the outcome, the request's booking is
	// what this process holds for it.
	defer c.opts.Bookings.restored(req.NamespacedName)
	pr := &autoscalingv1.ProvisioningRequest{}
	if err := c.opts.APIReader.Get(ctx, req.NamespacedName, pr); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !gang.Served(pr.Spec.ProvisioningClassName) {
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues(logging.Class, pr.Spec.ProvisioningClassName))
	claims, err := c.nodeClaims(ctx, pr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pr.DeletionTimestamp != nil {
		c.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	stored := pr.DeepCopy()
	var res reconcile.Result
	switch {
	case c.isTrue(pr, autoscalingv1.Failed), c.isTrue(pr, autoscalingv1.BookingExpired), c.isTrue(pr, autoscalingv1.CapacityRevoked):
		// Terminal: nothing is held any more.
		c.endBooking(req.NamespacedName, pr)
		err = c.unprotect(ctx, claims)
	default:
		if !c.isTrue(pr, autoscalingv1.Accepted) {
			c.set(pr, autoscalingv1.Accepted, metav1.ConditionTrue, ReasonAccepted, "joiner serves class "+pr.Spec.ProvisioningClassName)
		}
		if c.isTrue(pr, autoscalingv1.Provisioned) {
			res, err = c.book(ctx, pr, claims)
		} else {
			res, err = c.provision(ctx, pr, claims)
		}
	}
	terminal := c.isTrue(pr, autoscalingv1.Failed) || c.isTrue(pr, autoscalingv1.BookingExpired) || c.isTrue(pr, autoscalingv1.CapacityRevoked)
	c.opts.Bookings.serve(req.NamespacedName, !terminal)
	if perr := c.patchStatus(ctx, stored, pr); perr != nil {
		err = errors.Join(err, perr)
	}
	return res, err
}

// forget drops everything held for a request that is gone.
func (c *Controller) forget(key types.NamespacedName) {
	c.opts.Bookings.release(key)
	c.opts.Bookings.serve(key, false)
	c.retry.forget(key)
}

// nodeClaims are the NodeClaims launched for pr, as the API server has
// them.
func (c *Controller) nodeClaims(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) ([]*v1.NodeClaim, error) {
	var list v1.NodeClaimList
	if err := c.opts.APIReader.List(ctx, &list, client.MatchingLabels{autoscalingv1.LabelProvisioningRequestUID: string(pr.UID)}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of provisioningrequest %s/%s: %w", pr.Namespace, pr.Name, err)
	}
	out := make([]*v1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (c *Controller) isTrue(pr *autoscalingv1.ProvisioningRequest, t string) bool {
	return meta.IsStatusConditionTrue(pr.Status.Conditions, t)
}

// set sets one condition, stamping a transition with the injected clock.
func (c *Controller) set(pr *autoscalingv1.ProvisioningRequest, t string, status metav1.ConditionStatus, reason, message string) {
	if len(message) > 32768 {
		message = message[:32768]
	}
	meta.SetStatusCondition(&pr.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: pr.Generation, LastTransitionTime: metav1.NewTime(c.opts.Clock.Now())})
}

func (c *Controller) patchStatus(ctx context.Context, stored, pr *autoscalingv1.ProvisioningRequest) error {
	if equalStatus(stored, pr) {
		return nil
	}
	if err := c.opts.Client.Status().Patch(ctx, pr, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("patching status of provisioningrequest %s/%s: %w", pr.Namespace, pr.Name, err)
	}
	return nil
}

func equalStatus(a, b *autoscalingv1.ProvisioningRequest) bool {
	if len(a.Status.Conditions) != len(b.Status.Conditions) || len(a.Status.ProvisioningClassDetails) != len(b.Status.ProvisioningClassDetails) {
		return false
	}
	for i := range a.Status.Conditions {
		x, y := a.Status.Conditions[i], b.Status.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message {
			return false
		}
	}
	for k, v := range a.Status.ProvisioningClassDetails {
		if b.Status.ProvisioningClassDetails[k] != v {
			return false
		}
	}
	return true
}
