package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// The builders below make the objects controller tests share (pods, nodes,
// NodeClaims, NodePools) from an options struct whose zero value is a
// sensible default, so a test states only what it is about. Each returns a
// fresh object the test may change further.

// SimNodeClassRef is the reference to the SimNodeClass named name, the node
// class the builders default to.
func SimNodeClassRef(name string) *v1.NodeClassReference {
	return &v1.NodeClassReference{Group: simv1alpha1.Group, Kind: "SimNodeClass", Name: name}
}

// PodOptions describe a pod. The zero value is a pending pod "default/pod"
// with one container and no requests.
type PodOptions struct {
	Namespace, Name string
	UID             types.UID
	// NodeName binds the pod.
	NodeName string
	// CPU is the container's cpu request ("" for none).
	CPU         string
	Phase       corev1.PodPhase
	Labels      map[string]string
	Annotations map[string]string
	Tolerations []corev1.Toleration
	// DaemonSet makes a DaemonSet the pod's controller.
	DaemonSet bool
}

// Pod builds the pod o describes.
func Pod(o PodOptions) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, UID: o.UID, Labels: o.Labels, Annotations: o.Annotations},
		Spec: corev1.PodSpec{
			NodeName:    o.NodeName,
			Containers:  []corev1.Container{{Name: "c", Image: "registry.invalid/c:1"}},
			Tolerations: o.Tolerations,
		},
		Status: corev1.PodStatus{Phase: o.Phase},
	}
	if p.Namespace == "" {
		p.Namespace = "default"
	}
	if p.Name == "" {
		p.Name = "pod"
	}
	if o.CPU != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(o.CPU)}
	}
	if o.DaemonSet {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
	}
	return p
}

// NodeClaimOptions describe a NodeClaim. The zero value is "nodeclaim" of
// NodePool "default" on SimNodeClass "default", not launched.
type NodeClaimOptions struct {
	Name       string
	NodePool   string
	ProviderID string
	// NodeClassRef defaults to SimNodeClass "default".
	NodeClassRef *v1.NodeClassReference
	Requirements []v1.NodeSelectorRequirementWithMinValues
	Finalizers   []string
}

// NodeClaim builds the NodeClaim o describes.
func NodeClaim(o NodeClaimOptions) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Finalizers: o.Finalizers, Labels: map[string]string{v1.LabelNodePool: o.NodePool}},
		Spec:       v1.NodeClaimSpec{NodeClassRef: o.NodeClassRef, Requirements: o.Requirements},
		Status:     v1.NodeClaimStatus{ProviderID: o.ProviderID},
	}
	if nc.Name == "" {
		nc.Name = "nodeclaim"
	}
	if o.NodePool == "" {
		nc.Labels[v1.LabelNodePool] = "default"
	}
	if nc.Spec.NodeClassRef == nil {
		nc.Spec.NodeClassRef = SimNodeClassRef("default")
	}
	return nc
}

// NodePoolOptions describe a NodePool. The zero value is "default", amd64
// only, on SimNodeClass "default".
type NodePoolOptions struct {
	Name         string
	NodeClassRef *v1.NodeClassReference
}

// NodePool builds the NodePool o describes.
func NodePool(o NodePoolOptions) *v1.NodePool {
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			NodeClassRef: o.NodeClassRef,
		}}},
	}
	if np.Name == "" {
		np.Name = "default"
	}
	if np.Spec.Template.Spec.NodeClassRef == nil {
		np.Spec.Template.Spec.NodeClassRef = SimNodeClassRef("default")
	}
	return np
}
