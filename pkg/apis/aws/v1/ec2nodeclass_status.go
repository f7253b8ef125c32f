package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/apis/status"
)

// Condition types reported on an EC2NodeClass. Ready is True only when every
// other condition is True.
const (
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypePlacementGroupReady       = "PlacementGroupReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	ConditionTypeReady                     = status.ConditionReady
)

// EC2NodeClassStatus is what the nodeclass controller resolved from the
// selectors, plus the readiness conditions.
type EC2NodeClassStatus struct {
	// Subnets are the resolved subnets, most free IP addresses first.
	//
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`

	// SecurityGroups are the resolved security groups.
	//
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`

	// CapacityReservations are the resolved capacity reservations.
	//
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`

	// AMIs are the resolved AMIs, one entry per image and requirement set
	// (architecture, accelerator variant).
	//
	// +optional
	AMIs []AMI `json:"amis,omitempty"`

	// InstanceProfile is the instance profile instances launch with: the
	// one named in the spec, or the one joiner manages for the role.
	//
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`

	// Conditions report readiness; see the ConditionType constants.
	//
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID is the subnet id.
	//
	// +required
	ID string `json:"id"`
	// Zone is the availability zone name, for example us-west-2a.
	//
	// +required
	Zone string `json:"zone"`
	// ZoneID is the availability zone id, for example usw2-az1.
	//
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID is the security group id.
	//
	// +required
	ID string `json:"id"`
	// Name is the security group's group name.
	//
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved AMI and the node requirements it serves.
type AMI struct {
	// ID is the AMI id.
	//
	// +required
	ID string `json:"id"`
	// Name is the AMI name.
	//
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated is true once the AMI's deprecation time has passed; a
	// deprecated AMI is only used when nothing newer matches.
	//
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements are the node requirements (architecture, accelerators)
	// an instance type must meet to boot this AMI.
	//
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// CapacityReservationType distinguishes On-Demand Capacity Reservations from
// Capacity Blocks.
//
// +kubebuilder:validation:Enum:={default,capacity-block}
type CapacityReservationType string

// Capacity reservation types.
const (
	CapacityReservationTypeDefault       CapacityReservationType = "default"
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is active, or expiring when a capacity block is
// about to end and its nodes are being drained.
//
// +kubebuilder:validation:Enum:={active,expiring}
type CapacityReservationState string

// Capacity reservation states.
const (
	CapacityReservationStateActive   CapacityReservationState = "active"
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// ID is the reservation id.
	//
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// AvailabilityZone is the zone the reservation lives in.
	//
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// InstanceType is the instance type the reservation holds.
	//
	// +required
	InstanceType string `json:"instanceType"`
	// OwnerID is the account that owns the reservation.
	//
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria is open or targeted.
	//
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// ReservationType is default or capacity-block.
	//
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// State is active or expiring.
	//
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// Interruptible is true for reservations the owner may reclaim.
	//
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
	// EndTime is when the reservation ends, if it has an end.
	//
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
}

// GetConditions returns the status conditions.
func (in *EC2NodeClass) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the status conditions.
func (in *EC2NodeClass) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// StatusConditionTypes are the conditions whose conjunction is Ready.
// CapacityReservationsReady and PlacementGroupReady are not listed: they are
// only reported when capacity reservations or a placement group are
// selected; see StatusConditions.
func (in *EC2NodeClass) StatusConditionTypes() []string {
	return []string{
		ConditionTypeAMIsReady,
		ConditionTypeSubnetsReady,
		ConditionTypeSecurityGroupsReady,
		ConditionTypeInstanceProfileReady,
		ConditionTypeValidationSucceeded,
	}
}

// StatusConditions returns the condition set whose root is Ready. It also
// rolls up CapacityReservationsReady when capacityReservationSelectorTerms
// are set and PlacementGroupReady when placementGroupSelector is set.
func (in *EC2NodeClass) StatusConditions() status.ConditionSet {
	deps := in.StatusConditionTypes()
	if len(in.Spec.CapacityReservationSelectorTerms) > 0 {
		deps = append(deps, ConditionTypeCapacityReservationsReady)
	}
	if in.Spec.PlacementGroupSelector != nil {
		deps = append(deps, ConditionTypePlacementGroupReady)
	}
	return status.For(in, ConditionTypeReady, deps...)
}

// IsReady reports whether the Ready condition is True.
func (in *EC2NodeClass) IsReady() bool {
	return in.StatusConditions().IsTrue(ConditionTypeReady)
}
