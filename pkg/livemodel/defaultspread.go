package livemodel

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// +kubebuilder:rbac:groups="",resources=services;replicationcontrollers,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=get;list;watch

// defaultSpread gathers what kube-scheduler deduces default spread
// selectors from, for the pods to plan that declare no constraints: the
// Services of their namespaces and their controllers' selectors. A
// controller that is gone contributes nothing, as in kube-scheduler.
func (b *Builder) defaultSpread(ctx context.Context, pending []*corev1.Pod) (*scheduling.DefaultSpread, error) {
	d := &scheduling.DefaultSpread{Constraints: b.opts.DefaultSpread, Owners: map[types.UID]scheduling.OwnerSelector{}}
	namespaces := map[string]bool{}
	for _, p := range pending {
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		if !namespaces[p.Namespace] {
			namespaces[p.Namespace] = true
			var svcs corev1.ServiceList
			if err := b.opts.Client.List(ctx, &svcs, client.InNamespace(p.Namespace)); err != nil {
				return nil, fmt.Errorf("listing services of namespace %s: %w", p.Namespace, err)
			}
			for i := range svcs.Items {
				d.Services = append(d.Services, &svcs.Items[i])
			}
		}
		owner := pods.ControllerOf(p)
		if owner == nil {
			continue
		}
		if _, done := d.Owners[owner.UID]; done {
			continue
		}
		sel, err := b.ownerSelector(ctx, p.Namespace, owner)
		if err != nil {
			return nil, err
		}
		d.Owners[owner.UID] = sel
	}
	return d, nil
}

// ownerSelector is what kube-scheduler reads of a pod's controller: a
// ReplicationController's, ReplicaSet's or StatefulSet's selector, nothing
// for any other kind.
func (b *Builder) ownerSelector(ctx context.Context, ns string, owner *metav1.OwnerReference) (scheduling.OwnerSelector, error) {
	key := client.ObjectKey{Namespace: ns, Name: owner.Name}
	var err error
	var out scheduling.OwnerSelector
	switch {
	case owner.APIVersion == "v1" && owner.Kind == "ReplicationController":
		var rc corev1.ReplicationController
		if err = b.opts.Client.Get(ctx, key, &rc); err == nil && rc.UID == owner.UID {
			out.MatchLabels = rc.Spec.Selector
		}
	case owner.APIVersion == appsv1.SchemeGroupVersion.String() && owner.Kind == "ReplicaSet":
		var rs appsv1.ReplicaSet
		if err = b.opts.Client.Get(ctx, key, &rs); err == nil && rs.UID == owner.UID {
			out.Selector = rs.Spec.Selector
		}
	case owner.APIVersion == appsv1.SchemeGroupVersion.String() && owner.Kind == "StatefulSet":
		var ss appsv1.StatefulSet
		if err = b.opts.Client.Get(ctx, key, &ss); err == nil && ss.UID == owner.UID {
			out.Selector = ss.Spec.Selector
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return out, fmt.Errorf("getting %s %s/%s: %w", owner.Kind, ns, owner.Name, err)
	}
	return out, nil
}
