package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// book is the phase after Provisioned: the capacity stays held for the
// request's pods until they are all bound, or the booking time passes
// (BookingExpired), or a NodeClaim of the request goes away before its
// pods came (CapacityRevoked).
func (c *Controller) book(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, claims []*v1.NodeClaim) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(pr)
	total := 0
	for _, ps := range pr.Spec.PodSets {
		total += int(ps.Count)
	}
	bound, err := c.boundPods(ctx, pr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(bound) >= total {
		// Every pod came: the booking did its work.
		c.endBooking(key, pr)
		return reconcile.Result{}, c.unprotect(ctx, claims)
	}
	byName := map[string]*v1.NodeClaim{}
	for _, nc := range claims {
		if nc.DeletionTimestamp == nil {
			byName[nc.Name] = nc
		}
	}
	for _, name := range splitNames(pr) {
		if byName[name] == nil {
			c.set(pr, autoscalingv1.CapacityRevoked, metav1.ConditionTrue, ReasonCapacityRevoked,
				fmt.Sprintf("NodeClaim %s, launched for the request, went away before the request's pods came (%d of %d bound)", name, len(bound), total))
			metrics.ProvisioningRequestOutcomes.WithLabelValues(pr.Spec.ProvisioningClassName, outcomeCapacityRevoked).Inc()
			c.opts.Recorder.Publish(events.Warning(pr, ReasonCapacityRevoked, "Provision", "NodeClaim %s of the request went away before its pods came", name))
			c.endBooking(key, pr)
			return reconcile.Result{}, c.unprotect(ctx, claims)
		}
	}
	cond := findCondition(pr, autoscalingv1.Provisioned)
	expires := cond.LastTransitionTime.Add(c.opts.BookingTTL)
	if !c.opts.Clock.Now().Before(expires) {
		c.set(pr, autoscalingv1.BookingExpired, metav1.ConditionTrue, ReasonBookingExpired,
			fmt.Sprintf("the capacity was held for the request's pods for %s and %d of %d came; it is released", c.opts.BookingTTL, len(bound), total))
		metrics.ProvisioningRequestOutcomes.WithLabelValues(pr.Spec.ProvisioningClassName, outcomeBookingExpired).Inc()
		c.opts.Recorder.Publish(events.Normal(pr, ReasonBookingExpired, "Provision", "Booking expired after %s with %d of %d pods bound", c.opts.BookingTTL, len(bound), total))
		c.endBooking(key, pr)
		return reconcile.Result{}, c.unprotect(ctx, claims)
	}
	live := make([]*v1.NodeClaim, 0, len(byName))
	for _, nc := range byName {
		live = append(live, nc)
	}
	if err := c.hold(ctx, pr, live, bound); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: max(expires.Sub(c.opts.Clock.Now()), time.Second)}, nil
}

// boundPods are the pods consuming pr that are bound to a node.
func (c *Controller) boundPods(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := c.opts.Client.List(ctx, &list, client.InNamespace(pr.Namespace)); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", pr.Namespace, err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest] == pr.Name && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// unprotect removes the do-not-disrupt annotation the request put on its
// NodeClaims: after the booking they are ordinary nodes.
func (c *Controller) unprotect(ctx context.Context, claims []*v1.NodeClaim) error {
	var errs []error
	for _, nc := range claims {
		if nc.DeletionTimestamp != nil || nc.Annotations[v1.AnnotationDoNotDisrupt] != "true" {
			continue
		}
		before := nc.DeepCopy()
		delete(nc.Annotations, v1.AnnotationDoNotDisrupt)
		if err := c.opts.Client.Patch(ctx, nc, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("removing %s from nodeclaim %s: %w", v1.AnnotationDoNotDisrupt, nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

func splitNames(pr *autoscalingv1.ProvisioningRequest) []string {
	var out []string
	s := string(pr.Status.ProvisioningClassDetails[detailNodeClaims])
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func findCondition(pr *autoscalingv1.ProvisioningRequest, t string) metav1.Condition {
	for _, c := range pr.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}
