package state

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// +kubebuilder:rbac:groups="",resources=nodes;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=csinodes,verbs=get;list;watch

// Register adds the reconcilers that feed the model from the manager's
// cache: state.node, state.nodeclaim, state.pod, state.csinode and
// state.daemonset. They run on every replica, leader or not, so a standby
// takes over with a warm model. Each reads the object's latest cached
// version and records it, or forgets it when it is gone: the order of
// events never matters.
func (c *Cluster) Register(mgr manager.Manager) error {
	kube := mgr.GetClient()
	// The model keeps the cache's Nodes, NodeClaims and pods rather than
	// deep copies of them: every object of the cluster would otherwise be
	// held twice (a pod about 4 KiB, a Node more). Get without the copy
	// hands over a new struct whose maps, slices and pointers are the
	// cache's; that is safe because neither the informer nor the model ever
	// changes an object it stored (an update replaces it), and the model's
	// readers either copy (Nodes, NodeByName) or promise not to change what
	// they read (ReadOnlyNodes).
	noCopy := &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}
	opts := func(workers int) controller.Options {
		return controller.Options{MaxConcurrentReconciles: workers, NeedLeaderElection: ptr.To(false)}
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("state.node").For(&corev1.Node{}).WithOptions(opts(10)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			n := &corev1.Node{}
			if err := kube.Get(ctx, req.NamespacedName, n, noCopy); err != nil {
				if apierrors.IsNotFound(err) {
					c.DeleteNode(req.Name)
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
			}
			c.updateNode(n)
			return reconcile.Result{}, nil
		})); err != nil {
		return fmt.Errorf("registering state.node: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("state.nodeclaim").For(&v1.NodeClaim{}).WithOptions(opts(10)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			nc := &v1.NodeClaim{}
			if err := kube.Get(ctx, req.NamespacedName, nc, noCopy); err != nil {
				if apierrors.IsNotFound(err) {
					c.DeleteNodeClaim(req.Name)
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, fmt.Errorf("getting nodeclaim %s: %w", req.Name, err)
			}
			c.updateNodeClaim(nc)
			return reconcile.Result{}, nil
		})); err != nil {
		return fmt.Errorf("registering state.nodeclaim: %w", err)
	}
	// Pods, the most numerous, are read from the informer's indexer: the
	// model keeps the cache's own *Pod, not even a struct copy (1.2 KiB a
	// pod, 13 MB at 10,000 pods).
	podCache, err := podIndexer(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("state.pod").For(&corev1.Pod{}).WithOptions(opts(20)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			obj, exists, err := podCache.GetByKey(req.String())
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("getting pod %s: %w", req.NamespacedName, err)
			}
			p, ok := obj.(*corev1.Pod)
			if !exists || !ok {
				c.DeletePod(req.NamespacedName)
				return reconcile.Result{}, nil
			}
			c.updatePod(p, true)
			return reconcile.Result{}, nil
		})); err != nil {
		return fmt.Errorf("registering state.pod: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("state.csinode").For(&storagev1.CSINode{}).WithOptions(opts(2)).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			cn := &storagev1.CSINode{}
			if err := kube.Get(ctx, req.NamespacedName, cn); err != nil {
				if apierrors.IsNotFound(err) {
					c.UpdateVolumeLimits(req.Name, nil)
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, fmt.Errorf("getting csinode %s: %w", req.Name, err)
			}
			c.UpdateVolumeLimits(req.Name, VolumeLimits(cn))
			return reconcile.Result{}, nil
		})); err != nil {
		return fmt.Errorf("registering state.csinode: %w", err)
	}
	// A DaemonSet's pod takes its namespace's LimitRange defaults, so a
	// LimitRange change requeues the namespace's DaemonSets.
	daemonSetsOfNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &appsv1.DaemonSetList{}
		if err := kube.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return out
	})
	if err := ctrl.NewControllerManagedBy(mgr).Named("state.daemonset").For(&appsv1.DaemonSet{}).WithOptions(opts(2)).
		Watches(&corev1.LimitRange{}, daemonSetsOfNamespace).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			ds := &appsv1.DaemonSet{}
			if err := kube.Get(ctx, req.NamespacedName, ds); err != nil {
				if apierrors.IsNotFound(err) {
					c.DeleteDaemonSet(req.NamespacedName)
					return reconcile.Result{}, nil
				}
				return reconcile.Result{}, fmt.Errorf("getting daemonset %s: %w", req.NamespacedName, err)
			}
			limitRanges := &corev1.LimitRangeList{}
			if err := kube.List(ctx, limitRanges, client.InNamespace(ds.Namespace)); err != nil {
				return reconcile.Result{}, fmt.Errorf("listing limitranges of %s: %w", ds.Namespace, err)
			}
			c.UpdateDaemonSetPod(req.NamespacedName, pods.DaemonSetPod(ds, limitRanges.Items))
			return reconcile.Result{}, nil
		})); err != nil {
		return fmt.Errorf("registering state.daemonset: %w", err)
	}
	return nil
}

// VolumeLimits reads a CSINode's attach limit per driver; drivers that
// report none are left out (unlimited).
func VolumeLimits(cn *storagev1.CSINode) map[string]int {
	out := map[string]int{}
	for _, d := range cn.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			out[d.Name] = int(*d.Allocatable.Count)
		}
	}
	return out
}
