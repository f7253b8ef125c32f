package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels every node of a KWOKNodeClass carries, as Karpenter's kwok
// provider sets them; the four instance-* keys may be used in NodePool
// requirements (they are well-known labels of the karpenter.kwok.sh domain).
const (
	LabelInstanceSize   = Group + "/instance-size"
	LabelInstanceFamily = Group + "/instance-family"
	LabelInstanceMemory = Group + "/instance-memory"
	LabelInstanceCPU    = Group + "/instance-cpu"

	// LabelKwokNode marks a node kwok plays the kubelet of.
	LabelKwokNode      = "kwok.x-k8s.io/node"
	LabelKwokNodeValue = "fake"
)

// KWOKNodeClassSpec is the kwok provider's node class: only how long nodes
// take to register.
type KWOKNodeClassSpec struct {
	// NodeRegistrationDelay is how long a launched node takes to register
	// (a real machine's boot time).
	//
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	NodeRegistrationDelay metav1.Duration `json:"nodeRegistrationDelay,omitempty"`
}

// KWOKNodeClass is Karpenter's kwok provider node class. joiner's simulated
// cloud launches its nodes from the kwok instance types; a NodePool points
// at it with nodeClassRef {group: karpenter.kwok.sh, kind: KWOKNodeClass}.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=karpenter,shortName={kwoknc,kwokncs}
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KWOKNodeClassSpec `json:"spec,omitempty"`
	// Status is Ready from creation, as with the kwok provider, whose
	// classes need nothing resolved.
	//
	// +kubebuilder:default:={conditions: {{type: "Ready", status: "True", reason:"Ready", lastTransitionTime: "2024-01-01T01:01:01Z", message: ""}}}
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassStatus holds the Ready condition.
type KWOKNodeClassStatus struct {
	// Conditions report readiness.
	//
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
//
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

// ConditionTypeReady is the node class's readiness.
const ConditionTypeReady = "Ready"

// GetConditions returns the status conditions.
func (in *KWOKNodeClass) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the status conditions.
func (in *KWOKNodeClass) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}
