package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisioningRequest asks the autoscaler for the capacity a group of pods
// needs. Its spec is fixed at creation; the autoscaler answers in status.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=provreq;provreqs
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Class",type="string",JSONPath=".spec.provisioningClassName"
// +kubebuilder:printcolumn:name="Accepted",type="string",JSONPath=".status.conditions[?(@.type==\"Accepted\")].status"
// +kubebuilder:printcolumn:name="Provisioned",type="string",JSONPath=".status.conditions[?(@.type==\"Provisioned\")].status"
// +kubebuilder:printcolumn:name="Failed",type="string",JSONPath=".status.conditions[?(@.type==\"Failed\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ProvisioningRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says which pods the capacity is for and how to provision it. It
	// cannot be changed: delete the request and create another.
	// +kubebuilder:validation:Required
	Spec ProvisioningRequestSpec `json:"spec"`
	// Status is the autoscaler's answer.
	// +optional
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestList is a list of ProvisioningRequests.
//
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata"`
	// +optional
	Items []ProvisioningRequest `json:"items"`
}

// ProvisioningRequestSpec describes the pods to find room for.
type ProvisioningRequestSpec struct {
	// PodSets are the groups of pods, each a PodTemplate and a count.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	PodSets []PodSet `json:"podSets"`

	// ProvisioningClassName picks how the request is served. joiner serves
	// check-capacity.autoscaling.x-k8s.io (is there room on the existing
	// nodes now; nothing is launched) and
	// best-effort-atomic-scale-up.autoscaling.x-k8s.io (launch the nodes
	// every pod needs, all of them or none). Requests of other classes are
	// left alone, for another autoscaler to answer.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	ProvisioningClassName string `json:"provisioningClassName"`

	// Parameters are class-specific settings. Both classes read
	// ValidUntilSeconds (how long, from creation, a request that cannot be
	// met yet is retried before it is marked Failed); check-capacity reads
	// noRetry ("true": fail at once when there is no room).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:MaxProperties=100
	Parameters map[string]Parameter `json:"parameters,omitempty"`
}

// Parameter is one class parameter's value.
// +kubebuilder:validation:MaxLength=255
type Parameter string

// PodSet is Count pods shaped like one PodTemplate of the request's
// namespace.
type PodSet struct {
	// PodTemplateRef names the PodTemplate, in the request's namespace,
	// whose pods will consume the capacity. Its scheduling fields (requests,
	// node selector, affinity, tolerations, spread) must match the pods'.
	// +kubebuilder:validation:Required
	PodTemplateRef Reference `json:"podTemplateRef"`
	// Count is how many such pods.
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	// Name of the object.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// ProvisioningRequestStatus is the autoscaler's answer.
type ProvisioningRequestStatus struct {
	// Conditions are Accepted, Provisioned, Failed, BookingExpired and
	// CapacityRevoked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningClassDetails are the class's further answers (joiner:
	// the NodeClaims launched for the request, the booking's end).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails,omitempty"`
}

// Detail is one class detail's value.
// +kubebuilder:validation:MaxLength=32768
type Detail string

// Condition types, as Cluster Autoscaler and Kueue read them.
const (
	// Accepted: the autoscaler took the request on.
	Accepted = "Accepted"
	// Provisioned: the capacity exists (launched, or found free).
	Provisioned = "Provisioned"
	// Failed: the request cannot be met; the reason and message say why.
	// Terminal.
	Failed = "Failed"
	// BookingExpired: the capacity was provisioned and held for the
	// request's pods, and the hold has ended.
	BookingExpired = "BookingExpired"
	// CapacityRevoked: capacity provisioned for the request went away
	// before its pods used it.
	CapacityRevoked = "CapacityRevoked"
)

// Provisioning classes joiner serves.
const (
	// ClassCheckCapacity answers whether the pods fit the existing nodes
	// now, launching nothing.
	ClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ClassBestEffortAtomicScaleUp launches the nodes every pod of the
	// request needs, all of them or none.
	ClassBestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
)

// Pod annotations that tie a pod to a request.
const (
	// AnnotationConsumeProvisioningRequest names the request (in the pod's
	// namespace) whose capacity the pod uses.
	AnnotationConsumeProvisioningRequest = Group + "/consume-provisioning-request"
	// AnnotationProvisioningClassName is the class of that request.
	AnnotationProvisioningClassName = Group + "/provisioning-class-name"
)

// Parameters joiner reads.
const (
	// ParameterValidUntilSeconds: how long after creation a request that
	// cannot be met yet is retried before it is marked Failed.
	ParameterValidUntilSeconds = "ValidUntilSeconds"
	// ParameterNoRetry ("true"): check-capacity fails at once, instead of
	// retrying, when there is no room.
	ParameterNoRetry = "noRetry"
)

// What joiner writes on the NodeClaims it launches for a request.
const (
	// LabelProvisioningRequestUID is the UID of the request a NodeClaim was
	// launched for (a UID, since a namespaced name may not fit a label).
	LabelProvisioningRequestUID = "joiner.dev/provisioning-request-uid"
	// AnnotationProvisioningRequest is that request's namespace/name.
	AnnotationProvisioningRequest = "joiner.dev/provisioning-request"
	// AnnotationLaunchGroup holds a NodeClaim back from the lifecycle's
	// one-by-one launch while its request launches the whole group in one
	// all-or-nothing call; it is removed once the group launched, and the
	// lifecycle then records the instance launched for it.
	AnnotationLaunchGroup = "joiner.dev/launch-group"
)
