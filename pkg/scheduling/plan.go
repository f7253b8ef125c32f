package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

// Plan is the solver's answer for one Snapshot. It is read-only: new
// NodeClaims with the same launch options share their InstanceTypes and
// instance-type requirement values.
type Plan struct {
	// Existing lists pods placed on existing nodes and in-flight NodeClaims,
	// in the Snapshot's node order.
	Existing []ExistingPlacement
	// NewNodeClaims are the nodes to launch, each with the pods it carries.
	NewNodeClaims []*NewNodeClaim
	// Unschedulable lists the pods that fit nowhere, with why.
	Unschedulable []PodError
	// ListPrices is Options.ListPrices: the new nodes are priced at their
	// offerings' list prices alone.
	ListPrices bool
}

// ExistingPlacement is the pods placed on one existing node.
type ExistingPlacement struct {
	Node string
	Pods []*corev1.Pod
}

// NewNodeClaim is one node to launch.
type NewNodeClaim struct {
	// NodePool is the NodePool the node belongs to.
	NodePool string
	// Requirements are the NodePool's requirements narrowed by every pod the
	// node carries (zone, capacity type, arch, instance type, ...). They
	// always constrain node.kubernetes.io/instance-type, topology.kubernetes.io/zone
	// and karpenter.sh/capacity-type.
	Requirements []Requirement
	// InstanceTypes are the launch options, cheapest compatible offering
	// first (as Karpenter's launch expects them); each fits every pod.
	InstanceTypes []*InstanceType
	// Pods are the pods the node carries (DaemonSet pods excluded).
	Pods []*corev1.Pod
	// Requests is the sum of the pods' requests plus DaemonSet overhead.
	Requests corev1.ResourceList
	// Price is what the node costs on its cheapest launch option, in
	// $/hour: the cheapest available offering among InstanceTypes
	// compatible with Requirements, priced by NodePrice with Requests' CPU
	// (the list price alone under Options.ListPrices). PriceParts is what
	// that price is made of.
	Price      float64
	PriceParts Price
	// MinValuesRelaxed is true when Options.MinValuesBestEffort lowered a
	// minValues in Requirements to the values the launch options offer
	// (Karpenter's karpenter.sh/nodeclaim-min-values-relaxed).
	MinValuesRelaxed bool
}
