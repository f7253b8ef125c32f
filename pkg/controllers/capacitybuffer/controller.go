// Package capacitybuffer is the capacitybuffer controller (Karpenter's
// CapacityBuffer feature gate): it resolves each autoscaling.x-k8s.io
// CapacityBuffer's chunk (its PodTemplate, or the pod template of the
// Deployment, StatefulSet or ReplicaSet it names) and chunk count, puts the
// buffer's virtual pods in force in a capacitybuffer.Store that every
// snapshot reads, asks the provisioner for a pass, and reports the status
// (ReadyForProvisioning, LimitedByQuotas, replicas). Reporter writes the
// Provisioning condition from each pass's plan. With the gate off, each
// buffer gets an event naming the gate and nothing is planned for it.
package capacitybuffer

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/state"
)

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=podtemplates;resourcequotas;pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Reasons of the buffer's conditions (Karpenter's where it has one).
const (
	ReasonResolved             = "Resolved"
	ReasonQuotaExceeded        = "QuotaExceeded"
	ReasonWithinQuotas         = "WithinQuotas"
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	ReasonRequiresNewCapacity  = "RequiresNewCapacity"
	ReasonUnschedulable        = "Unschedulable"
	ReasonBufferEmpty          = "BufferEmpty"
	ReasonNotReady             = "NotReadyForProvisioning"
)

// resync re-plans every buffer this often, so room lost without a buffer
// event (its node interrupted, drifted away, deleted by hand) is launched
// again; Karpenter's buffer controller requeues at the same interval. Room
// a pod takes by binding into it is re-planned at the bind (roomTaken).
const resync = 30 * time.Second

// Trigger asks the provisioner for a pass (provisioning.Provisioner).
type Trigger interface {
	Trigger(uid types.UID)
}

// Options configure the controller.
type Options struct {
	Client   client.Client
	Store    *capacitybuffer.Store
	Trigger  Trigger
	Recorder events.Recorder
	Clock    clock.Clock
	// Enabled is the CapacityBuffer feature gate.
	Enabled bool
}

func (o *Options) validate() error {
	var errs []error
	for name, missing := range map[string]bool{
		"client": o.Client == nil, "store": o.Store == nil, "trigger": o.Trigger == nil, "recorder": o.Recorder == nil, "clock": o.Clock == nil,
	} {
		if missing {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(errs...)
}

// Controller is capacitybuffer.
type Controller struct{ opts Options }

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("capacitybuffer options: %w", err)
	}
	return &Controller{opts: opts}, nil
}

// Register adds capacitybuffer to mgr: a buffer is reconciled when its
// spec changes, when the PodTemplate or workload it names changes, when a
// ResourceQuota of its namespace changes, when a pod binds where its room
// was planned, and every resync.
func (c *Controller) Register(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).
		Named("capacitybuffer").
		For(&autoscalingv1beta1.CapacityBuffer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4})
	if c.opts.Enabled {
		b = b.Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.referring("", "PodTemplate"))).
			Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.referring(appsv1.GroupName, autoscalingv1beta1.KindDeployment))).
			Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.referring(appsv1.GroupName, autoscalingv1beta1.KindStatefulSet))).
			Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestsFromMapFunc(c.referring(appsv1.GroupName, autoscalingv1beta1.KindReplicaSet))).
			Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(c.referring("", "ResourceQuota"))).
			Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.roomTaken), builder.WithPredicates(bound))
	}
	if err := b.Complete(reconcile.Func(c.Reconcile)); err != nil {
		return fmt.Errorf("registering capacitybuffer: %w", err)
	}
	return nil
}

// bound passes a pod's binding: an update that gives it a node, or a pod
// created on one.
var bound = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return nodeName(e.Object) != "" },
	UpdateFunc:  func(e event.UpdateEvent) bool { return nodeName(e.ObjectOld) == "" && nodeName(e.ObjectNew) != "" },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func nodeName(o client.Object) string {
	if p, ok := o.(*corev1.Pod); ok {
		return p.Spec.NodeName
	}
	return ""
}

// roomTaken maps a pod that bound to a node to the buffers whose last
// planned room is on that node or its NodeClaim: kube-scheduler sees no
// virtual pod, so a pod that fits the room binds there without ever being
// pending for joiner, and the room is gone until the buffer is planned
// again. Reconciling the buffer asks the provisioner for that pass now
// rather than at the next resync.
func (c *Controller) roomTaken(ctx context.Context, o client.Object) []reconcile.Request {
	name := nodeName(o)
	if name == "" || !c.opts.Store.Planned() {
		return nil
	}
	names := []string{name}
	node := &corev1.Node{}
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: name}, node); err == nil && node.Spec.ProviderID != "" {
		var claims v1.NodeClaimList
		if err := c.opts.Client.List(ctx, &claims, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err == nil {
			for i := range claims.Items {
				names = append(names, claims.Items[i].Name)
			}
		}
	}
	var out []reconcile.Request
	for _, k := range c.opts.Store.HoldsRoomOn(names...) {
		out = append(out, reconcile.Request{NamespacedName: k})
	}
	return out
}

// referring maps an object of group/kind to the buffers of its namespace
// that name it (every buffer of the namespace for a ResourceQuota).
func (c *Controller) referring(group, kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list autoscalingv1beta1.CapacityBufferList
		if err := c.opts.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			s := &list.Items[i].Spec
			names := kind == "ResourceQuota" ||
				(kind == "PodTemplate" && s.PodTemplateRef != nil && s.PodTemplateRef.Name == o.GetName()) ||
				(s.ScalableRef != nil && s.ScalableRef.APIGroup == group && s.ScalableRef.Kind == kind && s.ScalableRef.Name == o.GetName())
			if names {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// Reconcile resolves one buffer, puts its virtual pods in force and
// reports its status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			c.opts.Store.Delete(req.NamespacedName)
			c.opts.Trigger.Trigger(types.UID("capacitybuffer/" + req.String()))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting capacitybuffer: %w", err)
	}
	if !c.opts.Enabled {
		c.opts.Store.Delete(req.NamespacedName)
		c.opts.Recorder.Publish(events.Warning(cb, events.FeatureGateDisabled, "Resolve",
			"CapacityBuffer %s is not planned: it needs the CapacityBuffer feature gate; run joiner with --feature-gates=CapacityBuffer=true (FEATURE_GATES)", cb.Name))
		return reconcile.Result{}, nil
	}
	stored := cb.DeepCopy()
	count, pods, err := c.resolve(ctx, cb)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.opts.Store.Set(req.NamespacedName, count, pods)
	if !equality.Semantic.DeepEqual(stored.Status, cb.Status) {
		if err := c.opts.Client.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("patching capacitybuffer status: %w", err)
		}
	}
	if len(pods) > 0 {
		c.opts.Trigger.Trigger(cb.UID)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// resolve fills cb's status (ReadyForProvisioning, LimitedByQuotas,
// replicas, podTemplateRef) from capacitybuffer.Resolve and returns its
// chunk count and virtual pods; none when it cannot be resolved, which its
// ReadyForProvisioning condition says. An error is one retrying may fix.
func (c *Controller) resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) (capacitybuffer.Count, []*corev1.Pod, error) {
	cb.Status.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	res, err := capacitybuffer.Resolve(ctx, cb, objects{c.opts.Client})
	if err != nil {
		return capacitybuffer.Count{}, nil, err
	}
	if res.NotReady != "" {
		c.notReady(cb, res.NotReady, res.Message)
		return capacitybuffer.Count{}, nil, nil
	}
	cb.Status.PodTemplateRef, cb.Status.PodTemplateGeneration = nil, nil
	if pt := res.PodTemplate; pt != nil {
		cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: pt.Name}
		cb.Status.PodTemplateGeneration = ptr.To(pt.Generation)
	}
	count := res.Count
	cb.Status.Replicas = ptr.To(count.Chunks)
	c.set(cb, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, ReasonResolved,
		fmt.Sprintf("%d chunk(s) of the pod template resolved", count.Chunks))
	if count.Quota != "" {
		c.set(cb, autoscalingv1beta1.ConditionLimitedByQuotas, metav1.ConditionTrue, ReasonQuotaExceeded, count.Quota)
	} else {
		c.set(cb, autoscalingv1beta1.ConditionLimitedByQuotas, metav1.ConditionFalse, ReasonWithinQuotas, "no ResourceQuota of the namespace limits the buffer")
	}
	if count.Chunks == 0 {
		c.set(cb, autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, ReasonBufferEmpty, "the buffer resolves to zero chunks")
	}
	return count, res.Pods, nil
}

// objects reads what buffers name from the API server.
type objects struct{ client client.Client }

func (o objects) PodTemplate(ctx context.Context, namespace, name string) (*corev1.PodTemplate, error) {
	pt := &corev1.PodTemplate{}
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pt); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return pt, nil
}

func (o objects) Workload(ctx context.Context, kind, namespace, name string) (*corev1.PodTemplateSpec, *int32, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	switch kind {
	case autoscalingv1beta1.KindDeployment:
		var w appsv1.Deployment
		if err := o.client.Get(ctx, key, &w); err != nil {
			return nil, nil, client.IgnoreNotFound(err)
		}
		return &w.Spec.Template, w.Spec.Replicas, nil
	case autoscalingv1beta1.KindStatefulSet:
		var w appsv1.StatefulSet
		if err := o.client.Get(ctx, key, &w); err != nil {
			return nil, nil, client.IgnoreNotFound(err)
		}
		return &w.Spec.Template, w.Spec.Replicas, nil
	default:
		var w appsv1.ReplicaSet
		if err := o.client.Get(ctx, key, &w); err != nil {
			return nil, nil, client.IgnoreNotFound(err)
		}
		return &w.Spec.Template, w.Spec.Replicas, nil
	}
}

func (o objects) ResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	var quotas corev1.ResourceQuotaList
	if err := o.client.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return quotas.Items, nil
}

// notReady marks cb not ready for provisioning and plans nothing for it.
func (c *Controller) notReady(cb *autoscalingv1beta1.CapacityBuffer, reason, msg string) {
	cb.Status.Replicas = nil
	c.set(cb, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, reason, msg)
	c.set(cb, autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, ReasonNotReady, "the buffer is not ready for provisioning: "+msg)
	apimeta.RemoveStatusCondition(&cb.Status.Conditions, autoscalingv1beta1.ConditionLimitedByQuotas)
}

func (c *Controller) set(cb *autoscalingv1beta1.CapacityBuffer, t string, status metav1.ConditionStatus, reason, msg string) {
	setCondition(&cb.Status.Conditions, cb.Generation, c.opts.Clock, t, status, reason, msg)
}

// setCondition sets a condition, its transition time from clk.
func setCondition(conds *[]metav1.Condition, generation int64, clk clock.Clock, t string, status metav1.ConditionStatus, reason, msg string) bool {
	return apimeta.SetStatusCondition(conds, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(clk.Now()),
	})
}
