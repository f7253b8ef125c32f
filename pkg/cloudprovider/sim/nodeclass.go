package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
)

// NodeClassControllerName is the node class status controller's name.
const NodeClassControllerName = "simnodeclass.status"

// Reasons of the SimNodeClass Ready condition.
const (
	ReasonNodeClassReady  = "Ready"
	ReasonCatalogInvalid  = "CatalogInvalid"
	ReasonNoInstanceTypes = "NoInstanceTypes"
)

// NodeClassController keeps each SimNodeClass's status true: Ready when its
// catalog resolves to at least one instance type in its zones, Ready=False
// with a message saying what to fix otherwise (an unknown catalog or
// instance family), and status.zones. Launches from a Ready=False node
// class fail with NodeClassNotReadyError.
type NodeClassController struct {
	client  client.Client
	catalog CatalogFunc
}

// NewNodeClassController returns the controller; catalog defaults to
// DefaultCatalog.
func NewNodeClassController(c client.Client, catalog CatalogFunc) (*NodeClassController, error) {
	if c == nil {
		return nil, errors.New("simnodeclass status controller: client is required")
	}
	if catalog == nil {
		catalog = DefaultCatalog
	}
	return &NodeClassController{client: c, catalog: catalog}, nil
}

// Register adds the controller to mgr.
func (c *NodeClassController) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(NodeClassControllerName).
		For(&simv1alpha1.SimNodeClass{}).
		Complete(c)
	if err != nil {
		return fmt.Errorf("registering %s: %w", NodeClassControllerName, err)
	}
	return nil
}

// Reconcile computes one SimNodeClass's status and patches it when it
// changed.
func (c *NodeClassController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &simv1alpha1.SimNodeClass{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	patched := nc.DeepCopy()
	defaulted := nc.DeepCopy()
	defaulted.ApplyDefaults()
	patched.Status.Zones = slices.Clone(defaulted.Spec.Zones)
	cond := metav1.Condition{Type: simv1alpha1.ConditionTypeReady, ObservedGeneration: nc.Generation}
	its, err := c.catalog(defaulted)
	switch {
	case err != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonCatalogInvalid
		cond.Message = fmt.Sprintf("spec.catalog: %v", err)
	case len(filterForNodeClass(its, defaulted)) == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNoInstanceTypes
		cond.Message = "no instance type of the catalog is offered in spec.zones with spec.catalog.instanceFamilies; widen them"
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonNodeClassReady, "instance types are available"
	}
	meta.SetStatusCondition(&patched.Status.Conditions, cond)
	if equalStatus(nc.Status, patched.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.client.Status().Patch(ctx, patched, client.MergeFrom(nc)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("patching status of simnodeclass %s: %w", nc.Name, err)
	}
	return reconcile.Result{}, nil
}

func equalStatus(a, b simv1alpha1.SimNodeClassStatus) bool {
	if !slices.Equal(a.Zones, b.Zones) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
