package scheduling

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is one typed rejection: why a NodePool could not launch a node for
// a pod, or why an existing node could not take it. The solver produces it
// where the predicate rejects; callers (pod events, `joiner simulate`,
// `joiner explain`, metrics) read the kind and the detail fields instead of
// parsing text. String renders it in Karpenter's words; every String goes
// through Message, the one place reasons become text.
type Reason interface {
	// Kind is the reason's kind, a small fixed vocabulary fit for a metric
	// label.
	Kind() ReasonKind
	String() string
}

// ReasonKind names a kind of rejection. The values are stable: they are
// the reason label of joiner_pods_unschedulable.
type ReasonKind string

// The kinds of rejection the solver reports.
const (
	KindInvalidPod           ReasonKind = "InvalidPod"
	KindVolume               ReasonKind = "Volume"
	KindTaint                ReasonKind = "Taint"
	KindRequirement          ReasonKind = "Requirement"
	KindUndefinedLabel       ReasonKind = "UndefinedLabel"
	KindHostPort             ReasonKind = "HostPort"
	KindNoInstanceType       ReasonKind = "NoInstanceType"
	KindInsufficientResource ReasonKind = "InsufficientResource"
	KindMinValues            ReasonKind = "MinValues"
	KindTopology             ReasonKind = "Topology"
	KindLimit                ReasonKind = "Limit"
	KindNodeLabels           ReasonKind = "NodeLabels"
	KindVolumeLimit          ReasonKind = "VolumeLimit"
	KindMarkedForDeletion    ReasonKind = "MarkedForDeletion"
	KindNotChosen            ReasonKind = "NotChosen"
	KindExistingNodes        ReasonKind = "ExistingNodes"
	KindNoCapacity           ReasonKind = "NoCapacity"
)

// ReasonKinds lists every kind, so a metric can publish a zero for kinds
// no pod has right now.
var ReasonKinds = []ReasonKind{
	KindInvalidPod, KindVolume, KindTaint, KindRequirement, KindUndefinedLabel, KindHostPort,
	KindNoInstanceType, KindInsufficientResource, KindMinValues, KindTopology, KindLimit,
	KindNodeLabels, KindVolumeLimit, KindMarkedForDeletion, KindNotChosen, KindExistingNodes, KindNoCapacity,
	KindBackingOff,
	KindExcludesNodePools, KindResourceNotOffered, KindDynamicResources, KindDevices,
}

// Kinds for what used to be passed over without a word (issue 10): a pod
// that refuses every managed node, a resource no instance type has, a pod
// with no requests. Each reaches the pod as an event.
const (
	KindExcludesNodePools  ReasonKind = "ExcludesNodePools"
	KindResourceNotOffered ReasonKind = "ResourceNotOffered"
	// KindNoRequests is a warning, never a rejection: the pod is placed,
	// so it is not one of ReasonKinds (the unschedulable metric's labels).
	KindNoRequests ReasonKind = "NoRequests"
)

// ExcludesNodePools: every term of the pod's required node affinity asks
// for nodes without the karpenter.sh/nodepool label (as joiner's and
// Karpenter's own pods do), so no NodePool can ever launch a node for it.
// Karpenter skips such pods silently; joiner says so.
type ExcludesNodePools struct{}

// ResourceNotOffered: the pod requests Resource (typically an extended
// resource such as nvidia.com/gpu) and no instance type of the NodePool
// has any of it, whatever its size.
type ResourceNotOffered struct {
	Resource  corev1.ResourceName `json:"resource,omitempty"`
	Requested resource.Quantity   `json:"requested,omitempty"`
}

// NoRequests: a warning about a pod that is placed. None of its
// containers requests cpu or memory, so the solver packs it as if it used
// nothing and its node may be too small once it runs. Karpenter schedules
// such pods without a word.
type NoRequests struct{}

func (ExcludesNodePools) Kind() ReasonKind  { return KindExcludesNodePools }
func (ResourceNotOffered) Kind() ReasonKind { return KindResourceNotOffered }
func (NoRequests) Kind() ReasonKind         { return KindNoRequests }

func (r ExcludesNodePools) String() string  { return Message(r) }
func (r ResourceNotOffered) String() string { return Message(r) }
func (r NoRequests) String() string         { return Message(r) }

// PodWarnings are the warnings about a pod the solver places anyway (today
// only NoRequests). Init containers count: their requests size the pod too.
func PodWarnings(pod *corev1.Pod) []Reason {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			if !c.Resources.Requests.Cpu().IsZero() || !c.Resources.Requests.Memory().IsZero() {
				return nil
			}
		}
	}
	if pod.Spec.Overhead.Cpu().Sign() > 0 || pod.Spec.Overhead.Memory().Sign() > 0 {
		return nil
	}
	return []Reason{NoRequests{}}
}

// InvalidPod: the pod's own spec cannot be read (an unsupported operator, a
// malformed label selector). Retrying cannot help until the pod changes.
type InvalidPod struct {
	// Message is the parse error.
	Message string `json:"message,omitempty"`
}

// VolumeProblem says what is wrong with a pod's volume.
type VolumeProblem string

// Volume problems.
const (
	// VolumeInTreePlugin: a pod volume uses an in-tree plugin joiner does
	// not support (Volume, Plugin).
	VolumeInTreePlugin VolumeProblem = "InTreePlugin"
	// VolumeClaimNotFound: the PersistentVolumeClaim does not exist (Claim).
	VolumeClaimNotFound VolumeProblem = "ClaimNotFound"
	// VolumeNotFound: the claim's bound PersistentVolume does not exist
	// (PersistentVolume, Claim).
	VolumeNotFound VolumeProblem = "PersistentVolumeNotFound"
	// VolumeInTreePersistentVolume: the bound PersistentVolume uses an
	// in-tree plugin (PersistentVolume, Plugin).
	VolumeInTreePersistentVolume VolumeProblem = "InTreePersistentVolume"
	// VolumeNodeAffinity: the PersistentVolume's node affinity cannot be
	// read (PersistentVolume, Detail).
	VolumeNodeAffinity VolumeProblem = "InvalidNodeAffinity"
	// VolumeStorageClassNotFound: the claim's StorageClass does not exist
	// (StorageClass, Claim).
	VolumeStorageClassNotFound VolumeProblem = "StorageClassNotFound"
	// VolumeAllowedTopologies: the StorageClass's allowedTopologies cannot
	// be read (StorageClass, Detail).
	VolumeAllowedTopologies VolumeProblem = "InvalidAllowedTopologies"
)

// Volume: one of the pod's volumes keeps it from being placed anywhere.
type Volume struct {
	Problem VolumeProblem `json:"problem,omitempty"`
	// Volume is the pod's volume name (in-tree plugins).
	Volume string `json:"volume,omitempty"`
	// Claim is the PersistentVolumeClaim's name, in the pod's namespace.
	Claim            string `json:"claim,omitempty"`
	PersistentVolume string `json:"persistentVolume,omitempty"`
	StorageClass     string `json:"storageClass,omitempty"`
	// Plugin is the in-tree plugin's name.
	Plugin string `json:"plugin,omitempty"`
	// Detail is the parse error of node affinity or allowed topologies.
	Detail string `json:"detail,omitempty"`
}

// Error lets volume checks return a Volume as an error.
func (v Volume) Error() string { return Message(v) }

// Taint: the node or NodePool has a taint the pod does not tolerate.
type Taint struct {
	Taint corev1.Taint `json:"taint,omitempty"`
}

// IncompatibleRequirements: the pod's node requirements on Key and the
// NodePool's have no value in common.
type IncompatibleRequirements struct {
	Key string `json:"key,omitempty"`
	// Pod is the pod's requirement on Key (narrowed by the relaxation step
	// reported), NodePool the NodePool's; each is one or two node selector
	// requirements (Gt and Lt come as their own).
	Pod      []NodeSelector `json:"pod,omitempty"`
	NodePool []NodeSelector `json:"nodePool,omitempty"`
}

// NodeSelector is one node selector requirement as the solver sees it
// (Karpenter's Gte/Lte are already folded into Gt/Lt).
type NodeSelector struct {
	Operator corev1.NodeSelectorOperator `json:"operator,omitempty"`
	Values   []string                    `json:"values,omitempty"`
}

// UndefinedLabel: the pod requires a label that neither the NodePool nor
// any of its instance types defines.
type UndefinedLabel struct {
	Key string `json:"key,omitempty"`
}

// HostPort: a DaemonSet pod on every node of the NodePool binds a host port
// the pod needs.
type HostPort struct {
	Port     int32           `json:"port,omitempty"`
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// NoInstanceTypeCause narrows down NoInstanceType.
type NoInstanceTypeCause string

// Causes of NoInstanceType.
const (
	// NoTypes: the NodePool has no instance type with an available
	// offering at all.
	NoTypes NoInstanceTypeCause = "NoTypes"
	// NoTypeMatchesRequirements: types big enough exist, but none meets the
	// pod's requirements.
	NoTypeMatchesRequirements NoInstanceTypeCause = "Requirements"
	// NoTypeOffered: types meet the requirements but none has an available
	// offering in the zones and capacity types the pod allows.
	NoTypeOffered NoInstanceTypeCause = "Offering"
	// NoTypeFits: no single type meets both the requirements and the
	// requests.
	NoTypeFits NoInstanceTypeCause = "RequirementsAndResources"
)

// NoInstanceType: no instance type of the NodePool can carry the pod alone,
// for Cause. Requests are the pod's requests (DaemonSet overhead is already
// out of each type's allocatable); Requirements are the pod's merged with
// the NodePool's, plus the zones and capacity types left, sorted by key.
type NoInstanceType struct {
	Cause        NoInstanceTypeCause `json:"cause,omitempty"`
	Requests     corev1.ResourceList `json:"requests,omitempty"`
	Requirements []string            `json:"requirements,omitempty"`
	// Unavailable are the causes the cloud gave for the offerings that
	// would have served (NoTypeOffered only), sorted.
	Unavailable []UnavailableCause `json:"unavailable,omitempty"`
	// UnavailableDetails are what the cloud said with those causes (the
	// images a node class selects, ...), sorted.
	UnavailableDetails []string `json:"unavailableDetails,omitempty"`
}

// InsufficientResource: instance types meet the pod's requirements, but
// none has room for its requests. Shortfalls names each resource the pod
// asks more of than the largest compatible type offers (after DaemonSet
// overhead); on an existing node, more than the node has free. Requests
// and Requirements are as in NoInstanceType (empty on an existing node).
type InsufficientResource struct {
	Shortfalls   []Shortfall         `json:"shortfalls,omitempty"`
	Requests     corev1.ResourceList `json:"requests,omitempty"`
	Requirements []string            `json:"requirements,omitempty"`
}

// Shortfall is one resource the pod asks more of than is allowed.
type Shortfall struct {
	Resource  corev1.ResourceName `json:"resource,omitempty"`
	Requested resource.Quantity   `json:"requested,omitempty"`
	// LargestAllowed is the most any candidate offers.
	LargestAllowed resource.Quantity `json:"largestAllowed,omitempty"`
}

// MinValues: the NodePool's minValues on Key cannot be met by the instance
// types that could carry the pod.
type MinValues struct {
	Key       string `json:"key,omitempty"`
	Required  int    `json:"required"`
	Available int    `json:"available"`
}

// TopologyCause says which topology rule rejected the pod.
type TopologyCause string

// Topology causes.
const (
	// TopologyNoNodeWithMatch: hostname affinity to pods whose nodes cannot
	// take it.
	TopologyNoNodeWithMatch TopologyCause = "NoNodeWithMatchingPod"
	// TopologyNoMatchingPods: required affinity to pods that do not exist.
	TopologyNoMatchingPods TopologyCause = "NoMatchingPods"
	// TopologyNoDomain: no domain of Key keeps the constraint satisfied
	// (Counts, PodDomains, NodeDomains say where it stands).
	TopologyNoDomain TopologyCause = "NoDomain"
	// TopologyNoZone: the pod's zone-keyed terms together allow no zone.
	TopologyNoZone TopologyCause = "NoZone"
	// TopologyNoRoom: the pod is compatible and its topology allows some
	// domain, but no instance type carries it there beside the pods its
	// topology binds it to.
	TopologyNoRoom TopologyCause = "NoRoom"
	// TopologyNodeDomain: an existing node's domain (hostname, zone,
	// capacity type or another key) violates one of the pod's terms or a
	// term of pods already there.
	TopologyNodeDomain TopologyCause = "NodeDomain"
)

// Topology: a topology spread constraint or pod (anti-)affinity term rules
// out every place the pod could go.
type Topology struct {
	Cause TopologyCause `json:"cause,omitempty"`
	// Constraint is "topology spread", "pod affinity" or "pod
	// anti-affinity" ("" when no single term is to blame).
	Constraint string `json:"constraint,omitempty"`
	Key        string `json:"key,omitempty"`
	// Counts are the matching pods per domain; PodDomains the domains the
	// pod may use, NodeDomains those nodes exist or can be launched in.
	Counts      map[string]int `json:"counts,omitempty"`
	PodDomains  []string       `json:"podDomains,omitempty"`
	NodeDomains []string       `json:"nodeDomains,omitempty"`
	// MaxSkew is a topology spread's maxSkew (NoDomain only), so the
	// message can say what the counts break.
	MaxSkew int32 `json:"maxSkew,omitempty"`
}

// Limit: a node for the pod would take the NodePool over spec.limits on
// Resource ("nodes" for the node count).
type Limit struct {
	NodePool string              `json:"nodePool,omitempty"`
	Resource corev1.ResourceName `json:"resource,omitempty"`
}

// NodeLabels: an existing node's labels (zone and capacity type included)
// do not meet the pod's requirements.
type NodeLabels struct{}

// VolumeLimit: an existing node is at its CSI attach limit for Driver.
type VolumeLimit struct {
	Driver string `json:"driver,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// MarkedForDeletion: the existing node is being deleted or disrupted.
type MarkedForDeletion struct{}

// NotChosen: the existing node could take the pod but the solver placed it
// elsewhere (reported only when the pod ended up nowhere, which means
// another pod's placement took the room first).
type NotChosen struct{}

// ExistingNodes groups why no existing node (or in-flight NodeClaim) took
// the pod: one group per distinct node reason, most nodes first.
type ExistingNodes struct {
	Groups []NodeGroup `json:"groups,omitempty"`
}

// NodeGroup is how many existing nodes rejected the pod for one reason
// (the reason of the first such node in the snapshot's order).
type NodeGroup struct {
	Count  int    `json:"count"`
	Reason Reason `json:"reason,omitempty"`
}

// MarshalJSON writes the group with its reason's kind, which the Reason
// interface alone does not carry.
func (g NodeGroup) MarshalJSON() ([]byte, error) {
	var kind ReasonKind
	if g.Reason != nil {
		kind = g.Reason.Kind()
	}
	return json.Marshal(struct {
		Count  int        `json:"count"`
		Kind   ReasonKind `json:"kind"`
		Reason Reason     `json:"reason,omitempty"`
	}{g.Count, kind, g.Reason})
}

// NoCapacity: the snapshot had neither NodePools nor nodes.
type NoCapacity struct{}

func (InvalidPod) Kind() ReasonKind               { return KindInvalidPod }
func (Volume) Kind() ReasonKind                   { return KindVolume }
func (Taint) Kind() ReasonKind                    { return KindTaint }
func (IncompatibleRequirements) Kind() ReasonKind { return KindRequirement }
func (UndefinedLabel) Kind() ReasonKind           { return KindUndefinedLabel }
func (HostPort) Kind() ReasonKind                 { return KindHostPort }
func (NoInstanceType) Kind() ReasonKind           { return KindNoInstanceType }
func (InsufficientResource) Kind() ReasonKind     { return KindInsufficientResource }
func (MinValues) Kind() ReasonKind                { return KindMinValues }
func (Topology) Kind() ReasonKind                 { return KindTopology }
func (Limit) Kind() ReasonKind                    { return KindLimit }
func (NodeLabels) Kind() ReasonKind               { return KindNodeLabels }
func (VolumeLimit) Kind() ReasonKind              { return KindVolumeLimit }
func (MarkedForDeletion) Kind() ReasonKind        { return KindMarkedForDeletion }
func (NotChosen) Kind() ReasonKind                { return KindNotChosen }
func (ExistingNodes) Kind() ReasonKind            { return KindExistingNodes }
func (NoCapacity) Kind() ReasonKind               { return KindNoCapacity }

func (r InvalidPod) String() string               { return Message(r) }
func (r Volume) String() string                   { return Message(r) }
func (r Taint) String() string                    { return Message(r) }
func (r IncompatibleRequirements) String() string { return Message(r) }
func (r UndefinedLabel) String() string           { return Message(r) }
func (r HostPort) String() string                 { return Message(r) }
func (r NoInstanceType) String() string           { return Message(r) }
func (r InsufficientResource) String() string     { return Message(r) }
func (r MinValues) String() string                { return Message(r) }
func (r Topology) String() string                 { return Message(r) }
func (r Limit) String() string                    { return Message(r) }
func (r NodeLabels) String() string               { return Message(r) }
func (r VolumeLimit) String() string              { return Message(r) }
func (r MarkedForDeletion) String() string        { return Message(r) }
func (r NotChosen) String() string                { return Message(r) }
func (r ExistingNodes) String() string            { return Message(r) }
func (r NoCapacity) String() string               { return Message(r) }

// PodError says why a pod could not be placed: per NodePool, and for the
// existing capacity.
type PodError struct {
	Pod *corev1.Pod
	// NodePools holds why each NodePool could not launch a node for the
	// pod, by NodePool name (every NodePool of the snapshot).
	NodePools map[string]Reason
	// Existing is why no existing node or in-flight NodeClaim took the pod
	// (an ExistingNodes grouping); NoCapacity when the snapshot has neither
	// nodes nor NodePools; the pod's own InvalidPod or Volume reason when
	// there are no NodePools to carry it; nil otherwise.
	Existing Reason
}

// Kinds are the distinct kinds among the pod's reasons, sorted; an
// ExistingNodes grouping contributes the kinds of its groups.
func (pe PodError) Kinds() []ReasonKind {
	seen := map[ReasonKind]bool{}
	for _, r := range pe.NodePools {
		seen[r.Kind()] = true
	}
	switch e := pe.Existing.(type) {
	case nil:
	case ExistingNodes:
		for _, g := range e.Groups {
			seen[g.Reason.Kind()] = true
		}
	default:
		seen[e.Kind()] = true
	}
	out := make([]ReasonKind, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// CountByKind counts the pods with at least one reason of each kind (a pod
// counts once per distinct kind among its NodePools and existing nodes).
func CountByKind(errs []PodError) map[ReasonKind]int {
	out := map[ReasonKind]int{}
	for _, pe := range errs {
		for _, k := range pe.Kinds() {
			out[k]++
		}
	}
	return out
}

// CountByNodePool counts, per NodePool, the pods it rejected for each
// kind: how a NodePool explains the pods it could not take (for events,
// conditions and `joiner explain`).
func CountByNodePool(errs []PodError) map[string]map[ReasonKind]int {
	out := map[string]map[ReasonKind]int{}
	for _, pe := range errs {
		for pool, r := range pe.NodePools {
			m := out[pool]
			if m == nil {
				m = map[ReasonKind]int{}
				out[pool] = m
			}
			m[r.Kind()]++
		}
	}
	return out
}
