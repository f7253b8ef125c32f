// Package readiness maintains a NodePool's NodeClassReady and
// ValidationSucceeded conditions and, through them, Ready: a NodePool is
// Ready when its node class exists, is not being deleted and is Ready, and
// its spec passes runtime validation. The provisioner skips NodePools that
// are not Ready; the messages say what to fix.
package readiness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
)

// NodeClassReady reasons.
const (
	ReasonNodeClassNotFound          = "NodeClassNotFound"
	ReasonNodeClassTerminating       = "NodeClassTerminating"
	ReasonNodeClassReadinessUnknown  = "NodeClassReadinessUnknown"
	ReasonNodeClassKindNotSupported  = "NodeClassKindNotSupported"
	ReasonValidationFailed           = "ValidationFailed"
	conditionTypeNodeClassReadyInner = "Ready"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=sim.joiner.dev,resources=simnodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch

// Options configure the readiness controller.
type Options struct {
	// Client reads from the cache and patches NodePool status (required).
	Client client.Client
	// NodeClasses are empty objects of each node class kind NodePools may
	// reference (the cloud provider's GetSupportedNodeClasses); each must
	// expose GetConditions() []metav1.Condition (required, at least one).
	NodeClasses []client.Object
	// Clock stamps condition transitions (default: the real clock).
	Clock clock.PassiveClock
	// Recorder, when set, warns on a NodePool that uses the pre-v1 startup
	// taint karpenter.sh/uninitialized (seed 002).
	Recorder events.Recorder
}

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if len(o.NodeClasses) == 0 {
		errs = append(errs, errors.New("NodeClasses needs at least one node class kind"))
	}
	for _, nc := range o.NodeClasses {
		if _, ok := nc.(conditioned); !ok {
			errs = append(errs, fmt.Errorf("node class %T has no GetConditions method", nc))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nodepool readiness options: %w", errors.Join(errs...))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return nil
}

type conditioned interface {
	GetConditions() []metav1.Condition
}

// Controller is nodepool.readiness.
type Controller struct {
	opts  Options
	kinds map[schema.GroupKind]client.Object
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, kinds: map[schema.GroupKind]client.Object{}}
	for _, obj := range opts.NodeClasses {
		gvk, err := apiutil.GVKForObject(obj, opts.Client.Scheme())
		if err != nil {
			return nil, fmt.Errorf("resolving node class kind %T: %w", obj, err)
		}
		c.kinds[gvk.GroupKind()] = obj
	}
	return c, nil
}

// Register adds nodepool.readiness to mgr; a node class change re-evaluates
// the NodePools that reference it.
func (c *Controller) Register(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named("nodepool.readiness").For(&v1.NodePool{})
	for gk, obj := range c.kinds {
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return c.nodePoolsFor(ctx, gk, o.GetName())
		}))
	}
	if err := b.WithOptions(controller.Options{MaxConcurrentReconciles: 2}).Complete(reconcile.Func(c.Reconcile)); err != nil {
		return fmt.Errorf("registering nodepool.readiness: %w", err)
	}
	return nil
}

func (c *Controller) nodePoolsFor(ctx context.Context, gk schema.GroupKind, name string) []reconcile.Request {
	list := &v1.NodePoolList{}
	if err := c.opts.Client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		ref := list.Items[i].Spec.Template.Spec.NodeClassRef
		if ref != nil && ref.Group == gk.Group && ref.Kind == gk.Kind && ref.Name == name {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return out
}

// Reconcile evaluates one NodePool's readiness conditions.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.opts.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if np.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	conds := np.StatusConditions().WithClock(c.opts.Clock)
	nodeClass, err := c.nodeClassReady(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	requeue, err := c.registrationHealth(ctx, np, nodeClass)
	if err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	// registrationHealth may have patched the metadata: the status patch
	// is optimistic against that version.
	stored.ResourceVersion, stored.Annotations = np.ResourceVersion, np.Annotations
	if c.opts.Recorder != nil && (v1.HasLegacyUninitializedTaint(np.Spec.Template.Spec.StartupTaints) || v1.HasLegacyUninitializedTaint(np.Spec.Template.Spec.Taints)) {
		c.opts.Recorder.Publish(events.Warning(np, events.LegacyUninitializedTaint, "Validate", "NodePool %s uses the taint %s: %s.", np.Name, v1.TaintKeyUninitializedLegacy, v1.LegacyUninitializedTaintFix))
	}
	if errs := np.RuntimeValidate(); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		conds.SetFalse(v1.ConditionTypeValidationSucceeded, ReasonValidationFailed, strings.Join(msgs, "; "))
	} else {
		conds.SetTrue(v1.ConditionTypeValidationSucceeded)
	}
	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	if err := c.opts.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching nodepool %s readiness: %w", np.Name, err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// nodeClassReady sets NodeClassReady from the referenced node class, and
// returns it (nil when there is none).
func (c *Controller) nodeClassReady(ctx context.Context, np *v1.NodePool) (client.Object, error) {
	conds := np.StatusConditions().WithClock(c.opts.Clock)
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		conds.SetFalse(v1.ConditionTypeNodeClassReady, ReasonNodeClassNotFound, "spec.template.spec.nodeClassRef is not set")
		return nil, nil
	}
	proto, ok := c.kinds[schema.GroupKind{Group: ref.Group, Kind: ref.Kind}]
	if !ok {
		var supported []string
		for gk := range c.kinds {
			supported = append(supported, gk.Kind+"."+gk.Group)
		}
		sort.Strings(supported)
		conds.SetFalse(v1.ConditionTypeNodeClassReady, ReasonNodeClassKindNotSupported,
			fmt.Sprintf("nodeClassRef %s.%s is not a node class this cloud provider serves (supported: %s)", ref.Kind, ref.Group, strings.Join(supported, ", ")))
		return nil, nil
	}
	obj := proto.DeepCopyObject().(client.Object)
	if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			conds.SetFalse(v1.ConditionTypeNodeClassReady, ReasonNodeClassNotFound,
				fmt.Sprintf("%s %s not found: create it, or point spec.template.spec.nodeClassRef at an existing one", ref.Kind, ref.Name))
			return nil, nil
		}
		return nil, fmt.Errorf("getting %s %s for nodepool %s: %w", ref.Kind, ref.Name, np.Name, err)
	}
	if obj.GetDeletionTimestamp() != nil {
		conds.SetFalse(v1.ConditionTypeNodeClassReady, ReasonNodeClassTerminating, fmt.Sprintf("%s %s is being deleted", ref.Kind, ref.Name))
		return obj, nil
	}
	ready := meta.FindStatusCondition(obj.(conditioned).GetConditions(), conditionTypeNodeClassReadyInner)
	if ready == nil {
		conds.SetUnknownWithReason(v1.ConditionTypeNodeClassReady, ReasonNodeClassReadinessUnknown,
			fmt.Sprintf("%s %s has not reported readiness yet", ref.Kind, ref.Name))
		return obj, nil
	}
	if ready.Status == metav1.ConditionTrue {
		conds.SetTrue(v1.ConditionTypeNodeClassReady)
		return obj, nil
	}
	reason := ready.Reason
	if reason == "" {
		reason = ReasonNodeClassReadinessUnknown
	}
	conds.Set(metav1.Condition{Type: v1.ConditionTypeNodeClassReady, Status: ready.Status, Reason: reason,
		Message: fmt.Sprintf("%s %s is not ready: %s", ref.Kind, ref.Name, ready.Message)})
	return obj, nil
}
