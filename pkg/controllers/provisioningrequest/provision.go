package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/gang"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Outcomes, the outcome label of ProvisioningRequestOutcomes.
const (
	outcomeProvisioned      = "provisioned"
	outcomeCapacityNotFound = "capacity_not_found"
	outcomeRolledBack       = "launch_rolled_back"
	outcomeFailed           = "failed"
	outcomeBookingExpired   = "booking_expired"
	outcomeCapacityRevoked  = "capacity_revoked"
)

// provision is the phase before Provisioned: a launch under way is
// followed; otherwise, once any back-off is over, the request's pods are
// planned as one unit and what the plan needs is created.
func (c *Controller) provision(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, claims []*v1.NodeClaim) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(pr)
	now := c.opts.Clock.Now()
	if deadline, ok := validUntil(pr); ok && !now.Before(deadline) {
		err := c.deleteAll(ctx, claims)
		c.fail(pr, ReasonExpired, fmt.Sprintf("not provisioned within ValidUntilSeconds (%s) of its creation; %s", pr.Spec.Parameters[autoscalingv1.ParameterValidUntilSeconds], lastWhy(pr)))
		return reconcile.Result{}, err
	}
	var live, deleting []*v1.NodeClaim
	for _, nc := range claims {
		if nc.DeletionTimestamp != nil {
			deleting = append(deleting, nc)
		} else {
			live = append(live, nc)
		}
	}
	if len(splitNames(pr)) > 0 {
		return c.launching(ctx, pr, live)
	}
	if len(live) > 0 {
		// NodeClaims of an attempt the request no longer names (rolled back,
		// or created by a reconcile whose status patch was lost): they are
		// never launched, only deleted.
		return reconcile.Result{RequeueAfter: time.Second}, c.deleteAll(ctx, live)
	}
	if len(deleting) > 0 {
		// A rolled-back gang is still terminating: planning again now would
		// count its room twice, or leave it running beside a new gang.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if wait := c.retry.wait(key, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	templates, err := c.templates(ctx, pr)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := gang.Pods(pr, templates)
	if err != nil {
		c.notProvisioned(ctx, pr, ReasonInvalidRequest, err.Error(), outcomeCapacityNotFound)
		return reconcile.Result{RequeueAfter: c.retry.failed(key, now)}, nil
	}
	check := pr.Spec.ProvisioningClassName == autoscalingv1.ClassCheckCapacity
	plan, err := c.opts.Planner.PlanGang(ctx, pods, check)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("planning provisioningrequest %s: %w", key, err)
	}
	if !plan.Placed() {
		why := gang.Unplaced(plan.Plan, len(pods), check)
		if check && pr.Spec.Parameters[autoscalingv1.ParameterNoRetry] == "true" {
			c.fail(pr, ReasonCapacityIsNotFound, why)
			return reconcile.Result{}, nil
		}
		c.notProvisioned(ctx, pr, ReasonCapacityIsNotFound, why, outcomeCapacityNotFound)
		return reconcile.Result{RequeueAfter: c.retry.failed(key, now)}, nil
	}
	if err := setExisting(pr, plan.Plan.Existing); err != nil {
		return reconcile.Result{}, fmt.Errorf("booking provisioningrequest %s: %w", key, err)
	}
	if check || len(plan.Plan.NewNodeClaims) == 0 {
		c.provisioned(ctx, pr, ReasonCapacityIsFound, fmt.Sprintf("all %d pods fit the existing capacity; it is booked for them for %s", len(pods), c.opts.BookingTTL))
		return c.book(ctx, pr, nil)
	}
	group, canGroup := c.opts.CloudProvider.(cloudprovider.GroupLauncher)
	created, err := c.opts.Planner.CreateGang(ctx, plan, func(nc *v1.NodeClaim) {
		if nc.Labels == nil {
			nc.Labels = map[string]string{}
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Labels[autoscalingv1.LabelProvisioningRequestUID] = string(pr.UID)
		nc.Annotations[autoscalingv1.AnnotationProvisioningRequest] = key.String()
		// Consolidation must not take the booked nodes away before the
		// pods come; the annotation is removed when the booking ends.
		nc.Annotations[v1.AnnotationDoNotDisrupt] = "true"
		if canGroup {
			nc.Annotations[autoscalingv1.AnnotationLaunchGroup] = key.String()
		}
	})
	if err != nil {
		delete(pr.Status.ProvisioningClassDetails, detailExistingNodes)
		c.notProvisioned(ctx, pr, ReasonLaunchRolledBack, fmt.Sprintf("creating the request's %d NodeClaims: %v", len(plan.Plan.NewNodeClaims), err), outcomeRolledBack)
		return reconcile.Result{RequeueAfter: c.retry.failed(key, now)}, nil
	}
	names := make([]string, len(created))
	for i, nc := range created {
		names[i] = nc.Name
	}
	setDetail(pr, detailNodeClaims, strings.Join(names, ","))
	if err := c.hold(ctx, pr, created, nil); err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("created nodeclaims for provisioningrequest", logging.NodeClaims, len(created), logging.Pods, len(pods), logging.GroupLaunch, canGroup)
	if canGroup {
		return c.launchGroup(ctx, pr, group, created)
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
}

// launching follows the request's NodeClaims until every one launched
// (Provisioned), or rolls the whole request back when one went away
// (a launch failure deletes its NodeClaim) or they did not all launch
// within the launch TTL.
func (c *Controller) launching(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, live []*v1.NodeClaim) (reconcile.Result, error) {
	want := splitNames(pr)
	byName := map[string]*v1.NodeClaim{}
	for _, nc := range live {
		byName[nc.Name] = nc
	}
	var missing []string
	for _, name := range want {
		if byName[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return c.rollBack(ctx, pr, live, fmt.Sprintf("NodeClaim %s of the request failed to launch (see its events); the %d launched with it were deleted, and the request is retried whole", strings.Join(missing, ", "), len(live)))
	}
	var held []*v1.NodeClaim
	launched := 0
	oldest := c.opts.Clock.Now()
	for _, nc := range live {
		if nc.Annotations[autoscalingv1.AnnotationLaunchGroup] != "" {
			held = append(held, nc)
		}
		if nc.Status.ProviderID != "" {
			launched++
		}
		if nc.CreationTimestamp.Time.Before(oldest) {
			oldest = nc.CreationTimestamp.Time
		}
	}
	if err := c.hold(ctx, pr, live, nil); err != nil {
		return reconcile.Result{}, err
	}
	if len(held) > 0 {
		if group, ok := c.opts.CloudProvider.(cloudprovider.GroupLauncher); ok {
			return c.launchGroup(ctx, pr, group, held)
		}
		return reconcile.Result{}, c.release(ctx, held)
	}
	if launched == len(live) {
		c.provisioned(ctx, pr, ReasonProvisioned, fmt.Sprintf("all %d NodeClaims of the request launched; their capacity is booked for its pods for %s", len(live), c.opts.BookingTTL))
		return c.book(ctx, pr, live)
	}
	if c.opts.Clock.Since(oldest) > c.opts.LaunchTTL {
		return c.rollBack(ctx, pr, live, fmt.Sprintf("only %d of the request's %d NodeClaims launched within %s; all were deleted, and the request is retried whole", launched, len(live), c.opts.LaunchTTL))
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
}

// launchGroup launches the held NodeClaims in one all-or-nothing call and
// releases them to the lifecycle, which records each instance. When the
// cloud has no room for all of them nothing was launched: the NodeClaims
// are deleted and the request retries. When they cannot be launched as one
// group, they are launched one by one (rolled back on any failure).
func (c *Controller) launchGroup(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, group cloudprovider.GroupLauncher, held []*v1.NodeClaim) (reconcile.Result, error) {
	err := group.CreateGroup(ctx, held)
	switch {
	case err == nil:
		c.opts.Recorder.Publish(events.Normal(pr, ReasonGroupLaunched, "Provision", "Launched the %d instances of the request in one all-or-nothing call", len(held)))
	case cloudprovider.IsInsufficientCapacityError(err):
		return c.rollBack(ctx, pr, held, fmt.Sprintf("the cloud could not launch all %d instances at once, so it launched none: %v", len(held), err))
	default:
		log.FromContext(ctx).Info("launching the request's nodeclaims one by one", logging.Reason, err.Error())
		c.opts.Recorder.Publish(events.Normal(pr, ReasonGroupLaunched, "Provision", "The %d NodeClaims cannot be launched in one call (%v); launching them one by one, all deleted if any fails", len(held), err))
	}
	return reconcile.Result{RequeueAfter: time.Second}, c.release(ctx, held)
}

// release removes the launch-group hold, so the lifecycle launches (or
// records) each NodeClaim.
func (c *Controller) release(ctx context.Context, ncs []*v1.NodeClaim) error {
	var errs []error
	for _, nc := range ncs {
		if _, ok := nc.Annotations[autoscalingv1.AnnotationLaunchGroup]; !ok {
			continue
		}
		before := nc.DeepCopy()
		delete(nc.Annotations, autoscalingv1.AnnotationLaunchGroup)
		if err := c.opts.Client.Patch(ctx, nc, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("releasing nodeclaim %s to the lifecycle: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// rollBack deletes every NodeClaim of the request (the lifecycle
// terminates whatever launched), drops its booking and retries it after a
// back-off.
func (c *Controller) rollBack(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, claims []*v1.NodeClaim, why string) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(pr)
	err := c.deleteAll(ctx, claims)
	delete(pr.Status.ProvisioningClassDetails, detailNodeClaims)
	delete(pr.Status.ProvisioningClassDetails, detailExistingNodes)
	c.endBooking(key, pr)
	c.notProvisioned(ctx, pr, ReasonLaunchRolledBack, why, outcomeRolledBack)
	return reconcile.Result{RequeueAfter: c.retry.failed(key, c.opts.Clock.Now())}, err
}

func (c *Controller) deleteAll(ctx context.Context, claims []*v1.NodeClaim) error {
	var errs []error
	for _, nc := range claims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if err := c.opts.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// templates are the PodTemplates of pr's namespace, by name.
func (c *Controller) templates(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) (map[string]*corev1.PodTemplate, error) {
	var list corev1.PodTemplateList
	if err := c.opts.Client.List(ctx, &list, client.InNamespace(pr.Namespace)); err != nil {
		return nil, fmt.Errorf("listing podtemplates in %s: %w", pr.Namespace, err)
	}
	out := make(map[string]*corev1.PodTemplate, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// Event reasons on ProvisioningRequests.
const (
	ReasonGroupLaunched  = "GroupLaunched"
	ReasonNotProvisioned = "NotProvisioned"
)

func (c *Controller) provisioned(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, reason, message string) {
	c.set(pr, autoscalingv1.Provisioned, metav1.ConditionTrue, reason, message)
	c.retry.forget(client.ObjectKeyFromObject(pr))
	metrics.ProvisioningRequestOutcomes.WithLabelValues(pr.Spec.ProvisioningClassName, outcomeProvisioned).Inc()
	c.opts.Recorder.Publish(events.Normal(pr, ReasonProvisioned, "Provision", "%s", message))
	log.FromContext(ctx).Info("provisioningrequest provisioned", logging.Reason, reason)
}

func (c *Controller) notProvisioned(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, reason, message, outcome string) {
	c.set(pr, autoscalingv1.Provisioned, metav1.ConditionFalse, reason, message)
	metrics.ProvisioningRequestOutcomes.WithLabelValues(pr.Spec.ProvisioningClassName, outcome).Inc()
	c.opts.Recorder.Publish(events.Warning(pr, ReasonNotProvisioned, "Provision", "%s: %s", reason, message))
	log.FromContext(ctx).Info("provisioningrequest not provisioned", logging.Reason, reason, logging.Message, message)
}

func (c *Controller) fail(pr *autoscalingv1.ProvisioningRequest, reason, message string) {
	c.set(pr, autoscalingv1.Failed, metav1.ConditionTrue, reason, message)
	c.endBooking(client.ObjectKeyFromObject(pr), pr)
	metrics.ProvisioningRequestOutcomes.WithLabelValues(pr.Spec.ProvisioningClassName, outcomeFailed).Inc()
	c.opts.Recorder.Publish(events.Warning(pr, autoscalingv1.Failed, "Provision", "%s: %s", reason, message))
}

// lastWhy is the last reason the request was not provisioned.
func lastWhy(pr *autoscalingv1.ProvisioningRequest) string {
	for _, cond := range pr.Status.Conditions {
		if cond.Type == autoscalingv1.Provisioned && cond.Status == metav1.ConditionFalse {
			return "last attempt: " + cond.Message
		}
	}
	return "it was never attempted"
}

// validUntil is the request's ValidUntilSeconds deadline, if it has one.
func validUntil(pr *autoscalingv1.ProvisioningRequest) (time.Time, bool) {
	v, ok := pr.Spec.Parameters[autoscalingv1.ParameterValidUntilSeconds]
	if !ok {
		return time.Time{}, false
	}
	secs, err := strconv.Atoi(string(v))
	if err != nil || secs <= 0 {
		return time.Time{}, false
	}
	return pr.CreationTimestamp.Add(time.Duration(secs) * time.Second), true
}

func setDetail(pr *autoscalingv1.ProvisioningRequest, k, v string) {
	if pr.Status.ProvisioningClassDetails == nil {
		pr.Status.ProvisioningClassDetails = map[string]autoscalingv1.Detail{}
	}
	pr.Status.ProvisioningClassDetails[k] = autoscalingv1.Detail(v)
}

// hold books the request's capacity: its NodeClaims' requests (less what
// its bound pods already use there) and its placements on existing nodes
// (as its status records them, so a restarted joiner holds the same).
func (c *Controller) hold(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, claims []*v1.NodeClaim, bound []*corev1.Pod) error {
	key := client.ObjectKeyFromObject(pr)
	existing, err := c.existingPlacements(ctx, pr)
	if err != nil {
		return err
	}
	byNode := map[string][]*corev1.Pod{}
	usedOn := map[string]corev1.ResourceList{}
	boundOn := map[string]int{}
	for _, p := range bound {
		boundOn[p.Spec.NodeName]++
		u := usedOn[p.Spec.NodeName]
		if u == nil {
			u = corev1.ResourceList{}
			usedOn[p.Spec.NodeName] = u
		}
		for _, ctr := range p.Spec.Containers {
			for r, q := range ctr.Resources.Requests {
				sum := u[r]
				sum.Add(q)
				u[r] = sum
			}
		}
	}
	for _, nc := range claims {
		left := corev1.ResourceList{}
		for r, q := range nc.Spec.Resources.Requests {
			q = q.DeepCopy()
			if used, ok := usedOn[nc.Status.NodeName][r]; ok && nc.Status.NodeName != "" {
				q.Sub(used)
			}
			if q.Sign() > 0 {
				left[r] = q
			}
		}
		if len(left) > 0 {
			byNode[nc.Name] = []*corev1.Pod{placeholder(pr, nc.Name, left)}
		}
	}
	for node, pods := range existing {
		if n := boundOn[node]; n < len(pods) {
			byNode[node] = append(byNode[node], pods[n:]...)
		}
	}
	c.opts.Bookings.hold(key, pr.Spec.ProvisioningClassName, byNode)
	metrics.ProvisioningRequestsBooked.WithLabelValues(pr.Spec.ProvisioningClassName).Set(float64(c.opts.Bookings.count(pr.Spec.ProvisioningClassName)))
	return nil
}

// endBooking releases the request's booking.
func (c *Controller) endBooking(key types.NamespacedName, pr *autoscalingv1.ProvisioningRequest) {
	c.opts.Bookings.release(key)
	metrics.ProvisioningRequestsBooked.WithLabelValues(pr.Spec.ProvisioningClassName).Set(float64(c.opts.Bookings.count(pr.Spec.ProvisioningClassName)))
}

var _ livemodel.Bookings = (*Bookings)(nil)
