package scheduling

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Snapshot is everything the solver may look at. Callers build it once and
// must not mutate it (or anything it points to) while Solve runs; the solver
// never mutates it either.
type Snapshot struct {
	// Now is the snapshot's clock, so runs replay exactly.
	Now time.Time
	// NodePools that may launch new capacity. Order does not matter: the
	// solver orders them by weight (highest first), then by name.
	NodePools []*NodePool
	// InstanceTypes are the launchable instance types, keyed by NodePool
	// name (each NodePool's node class may offer a different set).
	InstanceTypes map[string][]*InstanceType
	// Nodes are existing Nodes and in-flight NodeClaims with the pods
	// already bound or nominated to them.
	Nodes []*ExistingNode
	// DaemonSets holds one pod per DaemonSet, built from its template; each
	// new node carries the overhead of every daemon pod that would land on it.
	DaemonSets []*corev1.Pod
	// Pods are the pending pods to place. Pods owned by a DaemonSet are
	// ignored (the DaemonSet controller places them, not the autoscaler).
	Pods []*corev1.Pod
	// Volumes is the storage view used for volume topology and attach limits.
	Volumes VolumeState
	// Namespaces are the cluster's namespaces with their labels, so a pod
	// (anti-)affinity term's namespaceSelector picks exactly the namespaces
	// it matches. nil means the caller does not know them: a non-empty
	// namespaceSelector then counts every namespace (the safe side for
	// affinity and the cautious side for anti-affinity).
	Namespaces []*corev1.Namespace
	// Devices is the Dynamic Resource Allocation view (pkg/dra), read when
	// Options.PlanDynamicResources is set; nil otherwise.
	Devices *Devices
	// DefaultSpread, when set, is kube-scheduler's cluster-default topology
	// spread (SCHEDULER_CONFIG): the pending pods without constraints of
	// their own are planned with it, as kube-scheduler will bind them.
	DefaultSpread *DefaultSpread
}

// NodePool is the solver's view of a karpenter.sh/v1 NodePool: its template
// and the resources it already uses, so limits can be enforced.
type NodePool struct {
	Name string
	// Weight orders NodePools: higher is tried first.
	Weight int32
	// Labels and Annotations come from spec.template.metadata.
	Labels      map[string]string
	Annotations map[string]string
	// Requirements come from spec.template.spec.requirements.
	Requirements []Requirement
	// Taints must be tolerated by pods placed on the NodePool's nodes.
	Taints []corev1.Taint
	// StartupTaints are present at boot and removed by an agent; pods need
	// not tolerate them.
	StartupTaints []corev1.Taint
	// Limits bound the total capacity of the NodePool (spec.limits); nil
	// means unlimited.
	Limits corev1.ResourceList
	// InUse is the capacity of the NodePool's existing nodes and in-flight
	// NodeClaims (status.resources plus what is launching), counted against
	// Limits.
	InUse corev1.ResourceList
	// NodeClassRef identifies the node class; the solver passes it through.
	NodeClassRef NodeClassRef
	// Backoffs are launches of this NodePool waiting out a back-off after
	// failing to register or initialise: until their NextAttempt (against
	// Snapshot.Now) the instance types they cover are unavailable.
	Backoffs []LaunchBackoff
}

// NodeClassRef names a NodePool's node class (group, kind, name).
type NodeClassRef struct {
	Group string
	Kind  string
	Name  string
}

// Requirement is one node selector requirement with Karpenter's extensions:
// the Gte/Lte operators and MinValues (keep at least that many distinct
// values of Key among a new node's instance-type options).
type Requirement struct {
	Key      string
	Operator corev1.NodeSelectorOperator // In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte
	Values   []string
	// MinValues is nil when unset.
	MinValues *int
}

// Operators Karpenter adds to corev1's node selector operators (the API's,
// under the solver's shorter names).
const (
	OpGte = v1.NodeSelectorOpGte
	OpLte = v1.NodeSelectorOpLte
)

// OfferingPrice is the price of type typ's offering in zone with
// capacityType among its, and false when none of its has that offering:
// what a running node costs, for adapters that price existing nodes.
func OfferingPrice(its []*InstanceType, typ, zone, capacityType string) (float64, bool) {
	for _, it := range its {
		if it.Name != typ {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o.Price, true
			}
		}
	}
	return 0, false
}

// RequirementsAdmit reports whether every requirement of reqs on key admits
// a node labelled key=value, as v1.RequirementAdmits reads the operators;
// keys reqs does not mention are unconstrained. Adapters use it to check an
// offering's zone or capacity type against a new node's requirements.
func RequirementsAdmit(reqs []Requirement, key, value string) bool {
	for _, r := range reqs {
		if r.Key == key && !v1.RequirementAdmits(r.Operator, r.Values, value, true) {
			return false
		}
	}
	return true
}

// InstanceType is a launchable machine shape and where and how it can be
// bought.
type InstanceType struct {
	Name string
	// Requirements maps each label key the type defines to its allowed
	// values (instance type, arch, os, family, cpu, zone, capacity type,
	// ...). An empty slice means the type has no value for that key, so only
	// DoesNotExist/NotIn selectors on it can match.
	Requirements map[string][]string
	// Capacity is the machine's raw capacity (cpu, memory, pods,
	// ephemeral-storage, extended resources such as nvidia.com/gpu).
	Capacity corev1.ResourceList
	// Overhead is subtracted from Capacity to get what pods can use.
	Overhead Overhead
	// Offerings are the zone × capacity-type combinations with their price.
	Offerings []Offering
	// Burst is set for a burstable type launched in unlimited credit mode:
	// CPU its pods request above the baseline is billed as surplus credits
	// (see NodePrice). nil for every other type.
	Burst *Burst
	// VolumePrice is what a node's EBS volumes (its node class's block
	// device mappings) cost per hour, whatever the offering.
	VolumePrice float64
	// PriceOverlaid and CapacityOverlaid say a NodeOverlay changed the
	// price of some offering or added extended resources (pkg/overlay);
	// NodeClaims launched with such a type carry Karpenter's overlay
	// annotations, and the cloud launches them in the NodeClaim's order.
	PriceOverlaid, CapacityOverlaid bool
}

// Overhead is what the node reserves for itself.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Offering is one way to buy an instance type.
type Offering struct {
	Zone         string
	CapacityType string // spot, on-demand or reserved
	Price        float64
	Available    bool
	// ReservationID is set for reserved offerings; ReservationCapacity is how
	// many more instances the reservation can still launch.
	ReservationID       string
	ReservationCapacity int
	// Unavailable says why an unavailable offering is, when the cloud
	// knows: a pod that fits nowhere for want of offerings is told the
	// cause ("the zone's subnets are out of addresses") instead of only
	// "no available offering".
	Unavailable UnavailableCause
	// UnavailableDetail is what the cloud adds to the cause, for people
	// ("EC2NodeClass default selects only amd64 images: ami-1 (al2023)").
	UnavailableDetail string
}

// UnavailableCause is why the cloud marked an offering unavailable.
type UnavailableCause string

// Causes of unavailable offerings.
const (
	// UnavailableInsufficientCapacity: a launch found no capacity for the
	// offering (InsufficientInstanceCapacity and kin), for a while.
	UnavailableInsufficientCapacity UnavailableCause = "InsufficientCapacity"
	// UnavailableSubnetExhausted: every subnet of the node class in the
	// offering's zone is out of IP addresses
	// (InsufficientFreeAddressesInSubnet).
	UnavailableSubnetExhausted UnavailableCause = "SubnetExhausted"
	// UnavailableNoImage: the node class selects no image of the instance
	// type's architecture (seed 000: amd64-only images on a Graviton
	// NodePool), so no offering of it can ever launch a Node.
	UnavailableNoImage UnavailableCause = "NoImageForArchitecture"
)

// Allocatable is Capacity minus every overhead, floored at zero.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range it.Capacity {
		a := q.DeepCopy()
		for _, rl := range []corev1.ResourceList{it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
			if o, ok := rl[name]; ok {
				a.Sub(o)
			}
		}
		if a.Sign() < 0 {
			a = resource.Quantity{Format: a.Format}
		}
		out[name] = a
	}
	return out
}

// ExistingNode is a Node, or an in-flight NodeClaim whose Node has not
// joined or initialised yet, that pending pods may land on.
type ExistingNode struct {
	// Name is the Node name, or the NodeClaim name while no Node exists.
	Name string
	// NodeClaim is the owning NodeClaim's name ("" for nodes joiner does not
	// manage).
	NodeClaim string
	// NodePool is the owning NodePool ("" for unmanaged nodes).
	NodePool string
	// Labels are the node's labels (for an in-flight NodeClaim, the labels
	// its requirements guarantee, including the hostname placeholder).
	Labels map[string]string
	// Taints are the node's taints. While Initialized is false, startup
	// taints and Karpenter's ephemeral taints are ignored, as the node will
	// shed them.
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	Initialized   bool
	// Allocatable is what pods may use on the node.
	Allocatable corev1.ResourceList
	// Pods are the pods bound or nominated to the node, DaemonSet pods
	// included; their requests count against Allocatable and they take part
	// in topology spread and pod (anti-)affinity.
	Pods []*corev1.Pod
	// VolumeLimits is the CSI attach limit per driver (from CSINode);
	// missing drivers are unlimited.
	VolumeLimits map[string]int
	// MarkedForDeletion nodes take no new pods, but their pods still count
	// for topology.
	MarkedForDeletion bool
}

// VolumeState is what the solver needs to know about storage.
type VolumeState struct {
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*StorageClass
}

// StorageClass is the part of a storage.k8s.io/v1 StorageClass the solver
// uses (kept narrow so the package does not import the storage API group).
type StorageClass struct {
	Name        string
	Provisioner string
	// WaitForFirstConsumer is true for volumeBindingMode WaitForFirstConsumer.
	WaitForFirstConsumer bool
	// AllowedTopologies restricts where volumes of the class can be created.
	AllowedTopologies []corev1.TopologySelectorTerm
}
