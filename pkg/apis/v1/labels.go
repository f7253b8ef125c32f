package v1

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Every well-known label, annotation, taint, finalizer and condition-type
// name joiner reads or writes lives in this file, so a grep for a name finds
// its one definition. The values are Karpenter's: nodes and manifests made
// for Karpenter work unchanged.

// Label domains.
const (
	// LabelDomain is the karpenter.sh label domain.
	LabelDomain = Group
	// AWSLabelDomain is the label domain of the AWS provider.
	AWSLabelDomain = "karpenter.k8s.aws"
	// AWSTopologyLabelDomain holds AWS topology labels (zone IDs).
	AWSTopologyLabelDomain = "topology.k8s.aws"
)

// TagNodeClaim is the cloud tag holding the name of the NodeClaim an
// instance was launched for, as Karpenter writes it (every provider; the
// NodePool tag shares its name with LabelNodePool).
const TagNodeClaim = LabelDomain + "/nodeclaim"

// karpenter.sh labels.
const (
	// LabelNodePool names the NodePool that owns a NodeClaim or Node. Set by
	// joiner only; users may not put it in a NodePool.
	LabelNodePool = LabelDomain + "/nodepool"
	// LabelCapacityType is how the instance was bought: spot, on-demand or
	// reserved.
	LabelCapacityType = LabelDomain + "/capacity-type"
	// LabelNodeRegistered is "true" on a Node once joiner has registered it.
	LabelNodeRegistered = LabelDomain + "/registered"
	// LabelNodeInitialized is "true" on a Node once it is initialised (ready,
	// startup taints gone, extended resources registered).
	LabelNodeInitialized = LabelDomain + "/initialized"
	// LabelDoNotSyncTaints is "true" on a Node whose taints joiner must not
	// copy from the NodeClaim (the node class already registers them).
	LabelDoNotSyncTaints = LabelDomain + "/do-not-sync-taints"
)

// Values of LabelCapacityType.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// CapacityTypes are the only valid values of LabelCapacityType.
var CapacityTypes = sets.New(CapacityTypeSpot, CapacityTypeOnDemand, CapacityTypeReserved)

// Kubernetes labels joiner understands. They are the corev1 constants,
// repeated here so this file is the complete list.
const (
	LabelTopologyZone   = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	LabelTopologyRegion = corev1.LabelTopologyRegion     // topology.kubernetes.io/region
	LabelInstanceType   = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelArch           = corev1.LabelArchStable         // kubernetes.io/arch
	LabelOS             = corev1.LabelOSStable           // kubernetes.io/os
	LabelWindowsBuild   = corev1.LabelWindowsBuild       // node.kubernetes.io/windows-build
	LabelHostname       = corev1.LabelHostname           // kubernetes.io/hostname

	// LabelExcludeFromExternalLoadBalancers is set to "karpenter" on a node
	// when it is tainted as disrupted, so load balancers drain it first.
	LabelExcludeFromExternalLoadBalancers = corev1.LabelNodeExcludeBalancers
)

// Deprecated Kubernetes label names that still appear on older nodes and in
// older pod specs. NormalizedLabels maps each to its current name.
const (
	LabelDeprecatedZone         = corev1.LabelFailureDomainBetaZone   // failure-domain.beta.kubernetes.io/zone
	LabelDeprecatedRegion       = corev1.LabelFailureDomainBetaRegion // failure-domain.beta.kubernetes.io/region
	LabelDeprecatedArch         = "beta.kubernetes.io/arch"
	LabelDeprecatedOS           = "beta.kubernetes.io/os"
	LabelDeprecatedInstanceType = corev1.LabelInstanceType // beta.kubernetes.io/instance-type
)

// NormalizedLabels maps deprecated label names to the names joiner reasons
// about, so a pod selecting on failure-domain.beta.kubernetes.io/zone is
// matched against topology.kubernetes.io/zone.
var NormalizedLabels = map[string]string{
	LabelDeprecatedZone:         LabelTopologyZone,
	LabelDeprecatedRegion:       LabelTopologyRegion,
	LabelDeprecatedArch:         LabelArch,
	LabelDeprecatedOS:           LabelOS,
	LabelDeprecatedInstanceType: LabelInstanceType,
}

// NormalizeLabel returns the current name of a possibly deprecated label.
func NormalizeLabel(key string) string {
	if n, ok := NormalizedLabels[key]; ok {
		return n
	}
	return key
}

// Labels of the AWS provider (karpenter.k8s.aws and topology.k8s.aws). They
// describe the instance type; the numeric ones support Gt/Lt/Gte/Lte.
const (
	LabelAWSEC2NodeClass                     = AWSLabelDomain + "/ec2nodeclass"
	LabelAWSInstanceCategory                 = AWSLabelDomain + "/instance-category"
	LabelAWSInstanceFamily                   = AWSLabelDomain + "/instance-family"
	LabelAWSInstanceGeneration               = AWSLabelDomain + "/instance-generation"
	LabelAWSInstanceSize                     = AWSLabelDomain + "/instance-size"
	LabelAWSInstanceCPU                      = AWSLabelDomain + "/instance-cpu"
	LabelAWSInstanceCPUManufacturer          = AWSLabelDomain + "/instance-cpu-manufacturer"
	LabelAWSInstanceCPUSustainedClock        = AWSLabelDomain + "/instance-cpu-sustained-clock-speed-mhz"
	LabelAWSInstanceMemory                   = AWSLabelDomain + "/instance-memory"
	LabelAWSInstanceNetworkBandwidth         = AWSLabelDomain + "/instance-network-bandwidth"
	LabelAWSInstanceEBSBandwidth             = AWSLabelDomain + "/instance-ebs-bandwidth"
	LabelAWSInstanceLocalNVMe                = AWSLabelDomain + "/instance-local-nvme"
	LabelAWSInstanceHypervisor               = AWSLabelDomain + "/instance-hypervisor"
	LabelAWSInstanceEncryptionInTransit      = AWSLabelDomain + "/instance-encryption-in-transit-supported"
	LabelAWSInstanceCapabilityFlex           = AWSLabelDomain + "/instance-capability-flex"
	LabelAWSInstanceTenancy                  = AWSLabelDomain + "/instance-tenancy"
	LabelAWSInstanceGPUName                  = AWSLabelDomain + "/instance-gpu-name"
	LabelAWSInstanceGPUManufacturer          = AWSLabelDomain + "/instance-gpu-manufacturer"
	LabelAWSInstanceGPUCount                 = AWSLabelDomain + "/instance-gpu-count"
	LabelAWSInstanceGPUMemory                = AWSLabelDomain + "/instance-gpu-memory"
	LabelAWSInstanceAcceleratorName          = AWSLabelDomain + "/instance-accelerator-name"
	LabelAWSInstanceAcceleratorManufacturer  = AWSLabelDomain + "/instance-accelerator-manufacturer"
	LabelAWSInstanceAcceleratorCount         = AWSLabelDomain + "/instance-accelerator-count"
	LabelAWSCapacityReservationID            = AWSLabelDomain + "/capacity-reservation-id"
	LabelAWSCapacityReservationType          = AWSLabelDomain + "/capacity-reservation-type"
	LabelAWSCapacityReservationInterruptible = AWSLabelDomain + "/capacity-reservation-interruptible"
	LabelAWSPlacementGroupID                 = AWSLabelDomain + "/placement-group-id"
	LabelAWSPlacementGroupPartition          = AWSLabelDomain + "/placement-group-partition"
	LabelAWSTopologyZoneID                   = AWSTopologyLabelDomain + "/zone-id"
)

// Annotations.
const (
	// AnnotationDoNotDisrupt on a pod ("true" or a duration) or a node/
	// NodeClaim ("true") blocks voluntary disruption.
	AnnotationDoNotDisrupt = LabelDomain + "/do-not-disrupt"
	// AnnotationNodePoolHash is the drift hash of a NodePool's template, on
	// the NodePool and on each NodeClaim it created.
	AnnotationNodePoolHash = LabelDomain + "/nodepool-hash"
	// AnnotationNodePoolHashVersion versions the hash algorithm; a mismatch
	// means "recompute", not "drifted".
	AnnotationNodePoolHashVersion = LabelDomain + "/nodepool-hash-version"
	// AnnotationNodeClaimTerminationTimestamp is the RFC3339 deadline after
	// which a terminating NodeClaim's pods are deleted regardless of PDBs.
	AnnotationNodeClaimTerminationTimestamp = LabelDomain + "/nodeclaim-termination-timestamp"
	// AnnotationLaunchHealth is joiner's record, on a NodePool, of its last
	// launch outcomes and of the launches backing off after failing to
	// register or initialise (JSON: see pkg/launchhealth.Record). It backs
	// the NodeRegistrationHealthy condition and survives a restart.
	AnnotationLaunchHealth = "joiner.dev/launch-health"
	// AnnotationStartupTaintsMissing records, on a NodeClaim, the startup
	// taints its Node registered without (joiner added them at
	// registration), so an initialization timeout can say the node's
	// bootstrap explains why they were never removed.
	AnnotationStartupTaintsMissing = "joiner.dev/startup-taints-missing-at-registration"
	// AnnotationDisruptionVerdict is joiner's record, on a NodeClaim, of
	// the disruption controller's latest verdict about its node (JSON: see
	// disruption.Record): whether a method may take it and, if not, why.
	// It is rewritten only when the verdict changes, so `joiner explain`
	// in another process can read it without the controller's memory.
	AnnotationDisruptionVerdict = "joiner.dev/disruption-verdict"
	// AnnotationNodeClaimMinValuesRelaxed is "true" when minValues were
	// relaxed to launch the NodeClaim.
	AnnotationNodeClaimMinValuesRelaxed = LabelDomain + "/nodeclaim-min-values-relaxed"
)

// NodePoolHashVersion is the current value of AnnotationNodePoolHashVersion.
// It deliberately differs from Karpenter's ("v3"): NodeClaims launched by
// Karpenter carry Karpenter's hash, which joiner does not reproduce, so on a
// version mismatch joiner re-stamps the NodeClaim instead of calling it
// drifted. Bump it whenever NodePool.Hash changes.
const NodePoolHashVersion = "joiner-v1"

// Taints.
const (
	// TaintKeyUnregistered must be on a node when its kubelet registers;
	// joiner removes it once labels and taints are synced.
	TaintKeyUnregistered = LabelDomain + "/unregistered"
	// TaintKeyDisrupted marks a node chosen for disruption or terminating.
	TaintKeyDisrupted = LabelDomain + "/disrupted"
	// TaintKeyUninitializedLegacy is the name older Karpenter releases used
	// for the startup race taint. joiner never sets it but recognises it when
	// explaining why a pod did not schedule.
	TaintKeyUninitializedLegacy = LabelDomain + "/uninitialized"
)

// LegacyUninitializedTaintFix is the v1 fix for a NodePool, userData or
// Node that still uses TaintKeyUninitializedLegacy (seed 002): the NodePool
// readiness controller, the NodeClaim lifecycle and `joiner doctor` all say
// it in these words.
const LegacyUninitializedTaintFix = "karpenter.sh/uninitialized is the taint of Karpenter before v1; joiner, like Karpenter v1, never removes it, so a node registered with it never runs pods and a NodePool that lists it under startupTaints never initialises a node. " +
	"Remove it from spec.template.spec.startupTaints and from the userData's --register-with-taints; the v1 taint is karpenter.sh/unregistered:NoExecute, which joiner adds to the userData it generates and removes once the Node is registered. " +
	"To hold pods off a new node until your own agent is ready, list that agent's taint under startupTaints and have the agent remove it"

// HasLegacyUninitializedTaint reports whether taints use the pre-v1 key.
func HasLegacyUninitializedTaint(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Key == TaintKeyUninitializedLegacy {
			return true
		}
	}
	return false
}

var (
	// UnregisteredNoExecuteTaint is the taint a node registers with.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}
	// DisruptedNoScheduleTaint is the taint on nodes being disrupted.
	DisruptedNoScheduleTaint = corev1.Taint{Key: TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}
)

// HasDisruptedTaint reports whether taints include DisruptedNoScheduleTaint
// (key and effect): the node is being disrupted or terminated.
func HasDisruptedTaint(taints []corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(&DisruptedNoScheduleTaint) })
}

// TaintKeyPrefixReadiness marks readiness gates set by node agents; any taint
// with this key prefix is ephemeral.
const TaintKeyPrefixReadiness = "readiness.k8s.io/"

// KnownEphemeralTaints are set by Kubernetes or joiner while a node starts and
// removed without user action. They are ignored when deciding whether pods
// fit a node that is still initialising, and they keep a NodeClaim from being
// Initialized while present. Taints whose key starts with
// TaintKeyPrefixReadiness are ephemeral too (see IsEphemeralTaint).
var KnownEphemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
	UnregisteredNoExecuteTaint,
}

// IsEphemeralTaint reports whether t is one of KnownEphemeralTaints (same
// key, value and effect) or a readiness.k8s.io/ taint.
func IsEphemeralTaint(t corev1.Taint) bool {
	if strings.HasPrefix(t.Key, TaintKeyPrefixReadiness) {
		return true
	}
	for _, e := range KnownEphemeralTaints {
		if e.Key == t.Key && e.Value == t.Value && e.Effect == t.Effect {
			return true
		}
	}
	return false
}

// Finalizers.
const (
	// TerminationFinalizer is on every NodeClaim and managed Node; it holds
	// deletion until the node is drained and the instance terminated.
	TerminationFinalizer = LabelDomain + "/termination"
)

// WellKnownLabels may be used in NodePool requirements and template labels
// even though their domains are restricted; joiner knows how to satisfy
// them from instance types and offerings. LabelNodePool is well known but
// set by joiner only, never by a NodePool.
var WellKnownLabels = sets.New(
	LabelNodePool,
	LabelCapacityType,
	LabelTopologyZone,
	LabelTopologyRegion,
	LabelInstanceType,
	LabelArch,
	LabelOS,
	LabelWindowsBuild,
)

// AWSWellKnownLabels are the karpenter.k8s.aws and topology.k8s.aws labels
// the AWS provider defines; other keys in karpenter.k8s.aws are restricted.
var AWSWellKnownLabels = sets.New(
	LabelAWSEC2NodeClass,
	LabelAWSInstanceCategory,
	LabelAWSInstanceFamily,
	LabelAWSInstanceGeneration,
	LabelAWSInstanceSize,
	LabelAWSInstanceCPU,
	LabelAWSInstanceCPUManufacturer,
	LabelAWSInstanceCPUSustainedClock,
	LabelAWSInstanceMemory,
	LabelAWSInstanceNetworkBandwidth,
	LabelAWSInstanceEBSBandwidth,
	LabelAWSInstanceLocalNVMe,
	LabelAWSInstanceHypervisor,
	LabelAWSInstanceEncryptionInTransit,
	LabelAWSInstanceCapabilityFlex,
	LabelAWSInstanceTenancy,
	LabelAWSInstanceGPUName,
	LabelAWSInstanceGPUManufacturer,
	LabelAWSInstanceGPUCount,
	LabelAWSInstanceGPUMemory,
	LabelAWSInstanceAcceleratorName,
	LabelAWSInstanceAcceleratorManufacturer,
	LabelAWSInstanceAcceleratorCount,
	LabelAWSCapacityReservationID,
	LabelAWSCapacityReservationType,
	LabelAWSCapacityReservationInterruptible,
	LabelAWSPlacementGroupID,
	LabelAWSPlacementGroupPartition,
	LabelAWSTopologyZoneID,
)

// RestrictedLabels may never appear in a NodePool's requirements or labels.
var RestrictedLabels = sets.New(LabelHostname)

// RestrictedLabelDomains are label domains (and their subdomains) whose keys
// users may not set, except WellKnownLabels and AWSWellKnownLabels.
var RestrictedLabelDomains = sets.New("kubernetes.io", "k8s.io", LabelDomain, AWSLabelDomain)

// LabelDomainExceptions are subdomains of RestrictedLabelDomains that users
// may set freely (node-role style labels, kops); a domain that ends with
// one is allowed, as in Karpenter.
var LabelDomainExceptions = sets.New("kops.k8s.io", corev1.LabelNamespaceSuffixNode, corev1.LabelNamespaceNodeRestriction)

// LabelDomainOf returns the prefix of a qualified label key ("" when the key
// has none).
func LabelDomainOf(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// IsRestrictedLabel reports whether a NodePool may not require or set key,
// and why. Well-known labels are allowed; so are keys in LabelDomainExceptions.
// LabelNodePool is reported as restricted: only joiner sets it.
func IsRestrictedLabel(key string) (bool, string) {
	if key == LabelNodePool {
		return true, "it is set by joiner to the NodePool's name"
	}
	if RestrictedLabels.Has(key) {
		return true, "it is set by the kubelet"
	}
	if WellKnownLabels.Has(key) || AWSWellKnownLabels.Has(key) {
		return false, ""
	}
	domain := LabelDomainOf(key)
	// As Karpenter: a domain ending with an exception is allowed, with or
	// without a dot before it ("subdomainnode-restriction.kubernetes.io").
	for exception := range LabelDomainExceptions {
		if strings.HasSuffix(domain, exception) {
			return false, ""
		}
	}
	for restricted := range RestrictedLabelDomains {
		if domainMatches(domain, restricted) {
			return true, "label domain \"" + restricted + "\" is restricted"
		}
	}
	return false, ""
}

func domainMatches(domain, parent string) bool {
	return domain == parent || strings.HasSuffix(domain, "."+parent)
}

// Condition types shared by every kind with a status: Ready is the root
// condition rolled up from each kind's dependents.
const (
	ConditionTypeReady = "Ready"
)

// NodeClaim condition types. Ready = Launched ∧ Registered ∧ Initialized;
// the others describe the NodeClaim without gating readiness.
const (
	ConditionTypeLaunched             = "Launched"
	ConditionTypeRegistered           = "Registered"
	ConditionTypeInitialized          = "Initialized"
	ConditionTypeDrifted              = "Drifted"
	ConditionTypeConsolidatable       = "Consolidatable"
	ConditionTypeEmpty                = "Empty"
	ConditionTypeDisruptionReason     = "DisruptionReason"
	ConditionTypeDrained              = "Drained"
	ConditionTypeVolumesDetached      = "VolumesDetached"
	ConditionTypeInstanceTerminating  = "InstanceTerminating"
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
)

// NodePool condition types. Ready = ValidationSucceeded ∧ NodeClassReady;
// NodeRegistrationHealthy is reported but does not gate readiness.
const (
	ConditionTypeValidationSucceeded     = "ValidationSucceeded"
	ConditionTypeNodeClassReady          = "NodeClassReady"
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
)
