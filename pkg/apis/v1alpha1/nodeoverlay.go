package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

// NodeOverlay changes what joiner believes about matching instance types:
// the price of their offerings (to prefer newer generations, or to account
// for Savings Plans and discounts) and extended resources they offer. The
// scheduling simulation, consolidation, `joiner simulate` and `explain` see
// the overlaid values; the cloud's own prices are untouched.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the overlay is applied"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description="Higher weights win"
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="!has(self.price) || !has(self.priceAdjustment)",message="spec: set either price or priceAdjustment, not both"
	// +required
	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec says which offerings an overlay matches and what it
// changes.
type NodeOverlaySpec struct {
	// Requirements select the instance types and offerings the overlay
	// applies to, by their labels (instance type, family, zone, capacity
	// type, ...), the NodePool (karpenter.sh/nodepool) and the NodePool
	// template's labels. Empty matches everything.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || size(x.values) != 0)",message="spec.requirements: operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'NotIn' || size(x.values) != 0)",message="spec.requirements: operator NotIn needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (size(x.values) == 1 && x.values[0].matches('^[0-9]+$')))",message="spec.requirements: operators Gt, Lt, Gte and Lte need exactly one non-negative integer value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Exists', 'DoesNotExist']) || !has(x.values) || size(x.values) == 0)",message="spec.requirements: operators Exists and DoesNotExist take no values"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +optional
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`

	// PriceAdjustment changes matching offerings' price by an amount
	// ("+0.5", "-1.2" $/h) or a percentage ("+10%", "-15%", at most
	// "-100%").
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`

	// Price replaces matching offerings' price ($/h).
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`

	// Capacity adds extended resources to matching instance types (such as
	// a device plugin's hugepages or smarter-devices/fuse); cpu, memory,
	// ephemeral-storage and pods cannot be overlaid.
	// +kubebuilder:validation:XValidation:rule="!('cpu' in self) && !('memory' in self) && !('ephemeral-storage' in self) && !('pods' in self)",message="spec.capacity: cpu, memory, ephemeral-storage and pods cannot be overlaid; capacity only adds extended resources"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// Weight orders overlays: where several match, the highest weight
	// wins. Overlays of equal weight merge; if they set different values
	// for the same offering or resource, they conflict and no overlay is
	// applied until that is resolved.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a label selector term: key, operator (In,
// NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte) and values.
type NodeSelectorRequirement struct {
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`
	// +kubebuilder:validation:Enum:={In,NotIn,Exists,DoesNotExist,Gt,Lt,Gte,Lte}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:items:MaxLength:=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// Condition types of a NodeOverlay.
const (
	// ConditionTypeValidationSucceeded is False when the overlay conflicts
	// with another of equal weight (reason Conflict) or is disabled.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
)

// Annotations joiner puts on NodeClaims whose instance types an overlay
// changed (Karpenter's).
const (
	AnnotationPriceOverlayApplied    = Group + "/price-overlay-applied"
	AnnotationCapacityOverlayApplied = Group + "/capacity-overlay-applied"
)

// NodeOverlayStatus is what joiner observed about the overlay.
type NodeOverlayStatus struct {
	// Conditions: ValidationSucceeded and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GetConditions implements status.Object.
func (in *NodeOverlay) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions implements status.Object.
func (in *NodeOverlay) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// StatusConditions returns the overlay's conditions with Ready rolled up
// from ValidationSucceeded.
func (in *NodeOverlay) StatusConditions() status.ConditionSet {
	return status.For(in, status.ConditionReady, ConditionTypeValidationSucceeded)
}
