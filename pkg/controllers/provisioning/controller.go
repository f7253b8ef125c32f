package provisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/livemodel"
)

// requeuePending is how often a pod that stays provisionable is checked
// again: one with no nomination triggers a batch each time, so capacity
// lost in flight (a launch that failed, a NodeClaim deleted) is planned
// again without any other event; one whose nomination holds is checked
// again when the nomination would end, if sooner.
const requeuePending = 10 * time.Second

// nominationEndSlack is how long after a nomination's end its pod is
// checked again, so the check finds it ended.
const nominationEndSlack = 100 * time.Millisecond

// Controller is the provisioner with its pod trigger: the trigger watches
// pods and feeds the batcher; the provisioner, a leader-elected runnable,
// plans and creates NodeClaims.
type Controller struct {
	*Provisioner
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	p, err := NewProvisioner(opts)
	if err != nil {
		return nil, err
	}
	// A pod whose nomination ended early (its node filled up, its
	// NodeClaim failed) needs a plan again; the pod trigger does not open
	// batches for nominated pods. Trigger never blocks.
	opts.Nominations.NotifyEnded(func(pod *corev1.Pod) { p.Trigger(pod.UID) })
	return &Controller{Provisioner: p}, nil
}

// Register adds the pod trigger and the provisioner to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("provisioner.trigger.pod").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && pod.Spec.NodeName == ""
		}))).
		// A NodeClaim that starts going away (a failed launch, a deletion)
		// leaves the pods nominated to it without capacity.
		Watches(&v1.NodeClaim{}, handler.Funcs{
			UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
					c.Trigger(types.UID("nodeclaim/" + e.ObjectNew.GetName()))
				}
			},
			DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				c.Trigger(types.UID("nodeclaim/" + e.Object.GetName()))
			},
		}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(reconcile.Func(c.reconcilePod))
	if err != nil {
		return fmt.Errorf("registering provisioner pod trigger: %w", err)
	}
	if err := mgr.Add(c.Provisioner); err != nil {
		return fmt.Errorf("adding provisioner: %w", err)
	}
	return nil
}

// reconcilePod triggers a batch for a provisionable pod whose nomination
// (if any) no longer holds, and checks it again later while it stays
// provisionable.
func (c *Controller) reconcilePod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !livemodel.Provisionable(pod, c.opts.Nominations) {
		return reconcile.Result{}, nil
	}
	if _, until, held := c.opts.Nominations.Holds(req.NamespacedName); held {
		// A pass would leave the pod out: it waits for its NodeClaim. In
		// a burst kube-scheduler rewrites the status of every such pod at
		// each attempt, and a trigger per rewrite held every batch open
		// to its maximum, so a pod whose node filled up waited a whole
		// window to be planned again. Its nomination ending early
		// triggers a batch at once (Nominations.NotifyEnded, wired in
		// NewController); its renewal falling due, at until (half a
		// window before it lapses), is caught by this recheck.
		return reconcile.Result{RequeueAfter: min(requeuePending, max(until.Sub(c.opts.Clock.Now()), 0)+nominationEndSlack)}, nil
	}
	c.Trigger(pod.UID)
	return reconcile.Result{RequeueAfter: requeuePending}, nil
}
