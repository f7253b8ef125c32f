package provisioning

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/state"
)

// NominationState is the part of pkg/state's Cluster the nomination
// writer uses.
type NominationState interface {
	// Nomination returns the NodeClaim a pod is planned for.
	Nomination(pod types.NamespacedName) (state.NominatedNode, bool)
	// PodsNominatedTo lists the pods planned for a NodeClaim.
	PodsNominatedTo(nodeClaimName string) []types.NamespacedName
	// NominatedNodeName and SetNominatedNodeName keep which pods' status.
	// nominatedNodeName joiner wrote, and to what.
	NominatedNodeName(pod types.NamespacedName) (string, bool)
	SetNominatedNodeName(pod types.NamespacedName, node string)
}

// nominationRecheck is how often a pending pod holding a
// status.nominatedNodeName joiner wrote is checked again: its nomination
// can end (the node filled up, the NodeClaim failed) without an event on
// the pod after the model took it in.
const nominationRecheck = 5 * time.Second

// NominationWriter keeps status.nominatedNodeName on the pods the
// provisioner planned: once a planned pod's NodeClaim has a Node, the pod
// names that Node, so kube-scheduler keeps room there for it (KEP-5278,
// "NominatedNodeName for expected pod placement") instead of giving the
// room to whichever pod it tries first. joiner owns the field only for the
// pods it wrote it on: it moves it when the plan changes, clears it when
// the nomination ends or the pod binds elsewhere, and never overwrites a
// value someone else (kube-scheduler preempting) set. kube-scheduler 1.36
// clears the field each time it tries the pod and finds no node (as it
// does while the node still carries its startup taints), so the writer
// sets it again after each clearing while the nomination stands: one patch
// per failed attempt, for at most the nomination window. Where
// kube-scheduler does not honour the field nothing breaks: the pod is
// planned by the model as before.
type NominationWriter struct {
	client client.Client
	state  NominationState
}

// NewNominationWriter returns a writer that reads pods and NodeClaims
// through c (the manager's cached client) and writes pod status through it.
func NewNominationWriter(c client.Client, s NominationState) *NominationWriter {
	return &NominationWriter{client: c, state: s}
}

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// Register adds the writer to mgr: it watches pending pods and pods with a
// nominated node, and NodeClaims (their pods' room appears when they
// register and vanishes when they go away).
func (w *NominationWriter) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named("provisioner.nomination").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && (pod.Spec.NodeName == "" || pod.Status.NominatedNodeName != "")
		}))).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, pod := range w.state.PodsNominatedTo(o.GetName()) {
				out = append(out, reconcile.Request{NamespacedName: pod})
			}
			return out
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(w)
	if err != nil {
		return fmt.Errorf("registering nomination writer: %w", err)
	}
	return nil
}

// Reconcile brings one pod's status.nominatedNodeName in line with its
// nomination.
func (w *NominationWriter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := w.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			w.state.SetNominatedNodeName(req.NamespacedName, "")
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	owned, isOwned := w.state.NominatedNodeName(req.NamespacedName)
	current := pod.Status.NominatedNodeName
	want, err := w.wanted(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case want == current:
		if pod.Spec.NodeName != "" {
			w.state.SetNominatedNodeName(req.NamespacedName, "")
		}
	case current != "" && !isOwned:
		// kube-scheduler nominated it (preemption): not joiner's to move.
	case isOwned && owned == want && current != "":
		// Someone changed the value joiner wrote: theirs now.
	default:
		if err := w.patch(ctx, pod, want); err != nil {
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).V(1).Info("set nominated node name", "pod", klogRef(pod), "node", want, "previous", current)
	}
	if want != "" && pod.Spec.NodeName == "" {
		return reconcile.Result{RequeueAfter: nominationRecheck}, nil
	}
	return reconcile.Result{}, nil
}

// wanted is the node pod should be nominated to: its nomination's Node
// while the pod is pending and the NodeClaim is registered and not going
// away; otherwise none (for a bound pod, the node it is bound to keeps a
// matching value as it is).
func (w *NominationWriter) wanted(ctx context.Context, pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		if pod.Status.NominatedNodeName == pod.Spec.NodeName {
			return pod.Spec.NodeName, nil
		}
		return "", nil
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", nil
	}
	nom, ok := w.state.Nomination(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok {
		return "", nil
	}
	// The cached NodeClaim, not the model's copy: this reconcile may run
	// on the NodeClaim's own event, before the model took it in.
	nc := &v1.NodeClaim{}
	if err := w.client.Get(ctx, types.NamespacedName{Name: nom.NodeClaim}, nc); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return "", nil
	}
	return nc.Status.NodeName, nil
}

// patch sets (or, with node "", clears) the pod's nominated node name and
// records that joiner owns the value.
func (w *NominationWriter) patch(ctx context.Context, pod *corev1.Pod, node string) error {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	base := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := w.client.Status().Patch(ctx, pod, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			w.state.SetNominatedNodeName(key, "")
			return nil
		}
		return fmt.Errorf("setting nominated node name of pod %s to %q: %w", key, node, err)
	}
	w.state.SetNominatedNodeName(key, node)
	return nil
}

func klogRef(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
