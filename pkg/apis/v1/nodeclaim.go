package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is a request for one node: joiner launches an instance that
// satisfies the spec, waits for it to register as a Node, and deletes the
// instance when the NodeClaim is deleted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description="Instance type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",description="Capacity type (spot, on-demand, reserved)"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description="Zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description="The Node registered for this NodeClaim"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Launched, registered and initialised"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1,description="Machine image"
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1,description="Provider ID of the instance"
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description="Owning NodePool"
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description="Node class"
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1,description="Whether the NodeClaim no longer matches its NodePool or node class"
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a NodeClaim's spec cannot change after creation; delete it and let its NodePool create a new one"
	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec describes the node to launch. It is immutable.
type NodeClaimSpec struct {
	// Taints are applied to the node; pods must tolerate them.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="spec.taints: each taint needs a non-empty key"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.taints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`

	// StartupTaints are applied at boot and removed by some agent.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, size(t.key) > 0)",message="spec.startupTaints: each taint needs a non-empty key"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="spec.startupTaints: effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`

	// Requirements constrain the instance to launch; they include the
	// NodePool's requirements and the resolved instance types.
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`

	// Resources are what the NodeClaim was sized for: the pods' requests
	// plus daemonset overhead.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// NodeClassRef names the provider node class.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`

	// TerminationGracePeriod is the longest the node may take to drain.
	// +kubebuilder:validation:Pattern:=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`

	// ExpireAfter is the longest the node may live; "Never" disables expiry.
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// ResourceRequirements are the resources a NodeClaim was sized for.
type ResourceRequirements struct {
	// Requests are the minimum resources the instance must provide.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what joiner observed about the NodeClaim's instance
// and node.
type NodeClaimStatus struct {
	// NodeName is the name of the Node registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the machine image the instance booted from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's estimated capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the estimated capacity available to pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions describe the NodeClaim's lifecycle; see the
	// ConditionType* constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is the last time a pod was bound to or removed from
	// the node since it was initialised; consolidateAfter counts from it,
	// or from initialisation when no pod came or went since.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}
