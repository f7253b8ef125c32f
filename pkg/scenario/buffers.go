package scenario

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
)

// Buffers are the input's CapacityBuffers as the last Snapshot resolved
// them (capacitybuffer.Resolve, as the controller resolves them), in input
// order; their virtual pods are among its pods.
func (m *Manifests) Buffers() []capacitybuffer.Resolution { return m.resolved }

// bufferPods resolves every CapacityBuffer of the input against its
// PodTemplates, workloads and ResourceQuotas and returns their virtual
// pods, planned after every real pod as joiner plans them.
func (m *Manifests) bufferPods() ([]*corev1.Pod, error) {
	m.resolved = nil
	var out []*corev1.Pod
	for _, b := range m.buffers {
		res, err := capacitybuffer.Resolve(context.Background(), b.obj, manifestObjects{m})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.where, err)
		}
		m.resolved = append(m.resolved, res)
		out = append(out, res.Pods...)
	}
	return out, nil
}

// manifestObjects finds what buffers name among the input's objects
// (capacitybuffer.Objects).
type manifestObjects struct{ m *Manifests }

func (o manifestObjects) PodTemplate(_ context.Context, namespace, name string) (*corev1.PodTemplate, error) {
	return o.m.podTemplates[namespace+"/"+name], nil
}

func (o manifestObjects) Workload(_ context.Context, kind, namespace, name string) (*corev1.PodTemplateSpec, *int32, error) {
	for _, w := range o.m.workloads {
		if w.obj.kind == kind && w.obj.meta.Namespace == namespace && w.obj.meta.Name == name {
			return &w.obj.template, &w.obj.replicas, nil
		}
	}
	return nil, nil, nil
}

func (o manifestObjects) ResourceQuotas(_ context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	return o.m.quotas[namespace], nil
}

// decodeBuffer reads a CapacityBuffer, refusing what its CRD's CEL rules
// refuse.
func decodeBuffer(js []byte) (*autoscalingv1beta1.CapacityBuffer, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := decodeStrict(js, cb); err != nil {
		return nil, err
	}
	if cb.Name == "" {
		return nil, fmt.Errorf("metadata.name: must be set")
	}
	if cb.Namespace == "" {
		cb.Namespace = metav1.NamespaceDefault
	}
	s := &cb.Spec
	if s.PodTemplateRef != nil && s.ScalableRef != nil {
		return nil, fmt.Errorf("spec: set either podTemplateRef or scalableRef, not both")
	}
	if s.PodTemplateRef != nil && s.Replicas == nil && s.Limits == nil {
		return nil, fmt.Errorf("spec: with podTemplateRef, set replicas or limits too")
	}
	if cb.UID == "" {
		// Virtual pods are named and identified from the buffer's UID.
		cb.UID = types.UID("simulated/capacitybuffer/" + cb.Namespace + "/" + cb.Name)
	}
	return cb, nil
}
