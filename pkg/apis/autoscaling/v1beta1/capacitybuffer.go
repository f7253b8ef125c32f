package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer keeps spare room in the cluster: a number of chunks, each
// the shape of one pod, that the autoscaler plans as if they were pending
// pods of the lowest priority, so real pods that arrive find nodes ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="How the buffer is provisioned"
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The PodTemplate giving a chunk's shape"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="The number of chunks planned"
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="Condition types"
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="Condition statuses"
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="Condition reasons"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// Limits bound a buffer's chunks by their summed requests.
type Limits corev1.ResourceList

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef names a workload with a scale subresource (a Deployment,
// StatefulSet or ReplicaSet) in the buffer's namespace.
type ScalableRef struct {
	// APIGroup is the workload's group ("" for the core group; "apps").
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ProvisioningStrategyActiveCapacity is the default strategy: the buffer's
// chunks are planned as pods, so nodes are launched for them. A buffer with
// any other strategy is left to the autoscaler that implements it.
const ProvisioningStrategyActiveCapacity = "buffer.x-k8s.io/active-capacity"

// The workload kinds a scalableRef may name (apps group): the ones whose
// pod template and replica count the buffer can read.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindReplicaSet  = "ReplicaSet"
)

// Annotations on the virtual pods a buffer's chunks are planned as
// (Karpenter's keys). The pods never exist in the API server; the keys let
// the solver place them last and every consumer of a plan leave them out
// of nominations, pod events and pod metrics.
const (
	// AnnotationVirtualPod marks a buffer's virtual pod ("true").
	AnnotationVirtualPod = "karpenter.sh/capacity-buffer-fake-pod"
	// AnnotationBufferName and AnnotationBufferNamespace name the buffer
	// the virtual pod belongs to.
	AnnotationBufferName      = "karpenter.sh/capacity-buffer-name"
	AnnotationBufferNamespace = "karpenter.sh/capacity-buffer-namespace"
)

// CapacityBufferSpec is what a buffer asks for.
//
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy says how the buffer is used; the default
	// buffer.x-k8s.io/active-capacity plans its chunks as pods.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`

	// PodTemplateRef names a PodTemplate whose pod is one chunk. Exactly one
	// of podTemplateRef and scalableRef is set.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// ScalableRef names a workload whose pod template is one chunk.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`

	// Replicas is the number of chunks. With percentage too, the larger
	// wins; limits cap both. Without either, as many chunks as fit limits.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Percentage is the number of chunks as a percentage of the
	// scalableRef's replicas, rounded up.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`

	// Limits cap the chunks' summed requests.
	// +optional
	Limits Limits `json:"limits,omitempty"`
}

// CapacityBufferStatus is what the autoscaler resolved and planned.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate a chunk's shape came from (unset
	// for a scalableRef).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of chunks planned.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the PodTemplate's generation resolved.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions: ReadyForProvisioning, Provisioning, LimitedByQuotas.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningStrategy is the strategy in use.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// Condition types of a CapacityBuffer (cluster-autoscaler's).
const (
	// ConditionReadyForProvisioning: the chunk's shape and count resolved.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning: True when every chunk fits existing capacity
	// (reason FitsExistingCapacity), False while some need new nodes
	// (RequiresNewCapacity) or cannot be planned.
	ConditionProvisioning = "Provisioning"
	// ConditionLimitedByQuotas: some chunks could not be planned within
	// NodePool limits.
	ConditionLimitedByQuotas = "LimitedByQuotas"
)
