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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/events"
)

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=podtemplates;resourcequotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Reasons of the buffer's conditions (Karpenter's where it has one).
const (
	ReasonResolved               = "Resolved"
	ReasonPodTemplateNotFound    = "PodTemplateNotFound"
	ReasonScalableRefNotFound    = "ScalableRefNotFound"
	ReasonUnsupportedScalableRef = "UnsupportedScalableRef"
	ReasonUnsupportedStrategy    = "UnsupportedProvisioningStrategy"
	ReasonQuotaExceeded          = "QuotaExceeded"
	ReasonWithinQuotas           = "WithinQuotas"
	ReasonFitsExistingCapacity   = "FitsExistingCapacity"
	ReasonRequiresNewCapacity    = "RequiresNewCapacity"
	ReasonUnschedulable          = "Unschedulable"
	ReasonBufferEmpty            = "BufferEmpty"
	ReasonNotReady               = "NotReadyForProvisioning"
)

// resync re-plans every buffer this often, so room lost without a buffer
// event (its node interrupted, drifted away, deleted by hand) is launched
// again; Karpenter's buffer controller requeues at the same interval.
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
// ResourceQuota of its namespace changes, and every resync.
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
			Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(c.referring("", "ResourceQuota")))
	}
	if err := b.Complete(reconcile.Func(c.Reconcile)); err != nil {
		return fmt.Errorf("registering capacitybuffer: %w", err)
	}
	return nil
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
	pods, err := c.resolve(ctx, cb)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.opts.Store.Set(req.NamespacedName, pods)
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
// replicas, podTemplateRef) and returns its virtual pods; none when it
// cannot be resolved, which its ReadyForProvisioning condition says. An
// error is one retrying may fix.
func (c *Controller) resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) ([]*corev1.Pod, error) {
	cb.Status.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	strategy := ptr.Deref(cb.Spec.ProvisioningStrategy, autoscalingv1beta1.ProvisioningStrategyActiveCapacity)
	if strategy != autoscalingv1beta1.ProvisioningStrategyActiveCapacity {
		c.notReady(cb, ReasonUnsupportedStrategy, fmt.Sprintf("provisioningStrategy %q is not one joiner implements (only %s); the buffer is left to the autoscaler that does",
			strategy, autoscalingv1beta1.ProvisioningStrategyActiveCapacity))
		return nil, nil
	}
	template, workloadReplicas, reason, err := c.template(ctx, cb)
	if err != nil {
		return nil, err
	}
	if reason != "" {
		return nil, nil
	}
	var quotas corev1.ResourceQuotaList
	if err := c.opts.Client.List(ctx, &quotas, client.InNamespace(cb.Namespace)); err != nil {
		return nil, fmt.Errorf("listing resourcequotas of namespace %s: %w", cb.Namespace, err)
	}
	chunk := capacitybuffer.ChunkPod(cb, template)
	count := capacitybuffer.Chunks(&cb.Spec, chunk, workloadReplicas, quotas.Items)
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
		return nil, nil
	}
	return capacitybuffer.VirtualPods(cb, chunk, count.Chunks), nil
}

// template is the chunk's pod template and, for a scalableRef, the
// workload's replicas. reason is set (with the condition) when the buffer
// names something that does not resolve.
func (c *Controller) template(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) (*corev1.PodTemplateSpec, *int32, string, error) {
	if ref := cb.Spec.PodTemplateRef; ref != nil {
		var pt corev1.PodTemplate
		if err := c.opts.Client.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: ref.Name}, &pt); err != nil {
			if apierrors.IsNotFound(err) {
				c.notReady(cb, ReasonPodTemplateNotFound, fmt.Sprintf("PodTemplate %s/%s not found", cb.Namespace, ref.Name))
				return nil, nil, ReasonPodTemplateNotFound, nil
			}
			return nil, nil, "", fmt.Errorf("getting podtemplate %s: %w", ref.Name, err)
		}
		cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: pt.Name}
		cb.Status.PodTemplateGeneration = ptr.To(pt.Generation)
		return &pt.Template, nil, "", nil
	}
	cb.Status.PodTemplateRef, cb.Status.PodTemplateGeneration = nil, nil
	ref := cb.Spec.ScalableRef
	if ref == nil {
		c.notReady(cb, ReasonScalableRefNotFound, "neither podTemplateRef nor scalableRef is set")
		return nil, nil, ReasonScalableRefNotFound, nil
	}
	var obj client.Object
	switch {
	case ref.APIGroup == appsv1.GroupName && ref.Kind == autoscalingv1beta1.KindDeployment:
		obj = &appsv1.Deployment{}
	case ref.APIGroup == appsv1.GroupName && ref.Kind == autoscalingv1beta1.KindStatefulSet:
		obj = &appsv1.StatefulSet{}
	case ref.APIGroup == appsv1.GroupName && ref.Kind == autoscalingv1beta1.KindReplicaSet:
		obj = &appsv1.ReplicaSet{}
	default:
		c.notReady(cb, ReasonUnsupportedScalableRef, fmt.Sprintf("scalableRef %s %q in group %q: joiner reads the pod template of apps Deployments, StatefulSets and ReplicaSets; use one of them or a podTemplateRef", ref.Kind, ref.Name, ref.APIGroup))
		return nil, nil, ReasonUnsupportedScalableRef, nil
	}
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.notReady(cb, ReasonScalableRefNotFound, fmt.Sprintf("%s %s/%s not found", ref.Kind, cb.Namespace, ref.Name))
			return nil, nil, ReasonScalableRefNotFound, nil
		}
		return nil, nil, "", fmt.Errorf("getting %s %s: %w", ref.Kind, ref.Name, err)
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template, ptr.To(ptr.Deref(w.Spec.Replicas, 1)), "", nil
	case *appsv1.StatefulSet:
		return &w.Spec.Template, ptr.To(ptr.Deref(w.Spec.Replicas, 1)), "", nil
	default:
		rs := obj.(*appsv1.ReplicaSet)
		return &rs.Spec.Template, ptr.To(ptr.Deref(rs.Spec.Replicas, 1)), "", nil
	}
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
