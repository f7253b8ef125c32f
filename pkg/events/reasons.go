package events

// Event reasons. Each names what happened to the object the event is about;
// the message says why and what to do.
const (
	// Pod events.
	Nominated        = "Nominated"
	FailedScheduling = "FailedScheduling"
	// NoResourceRequests: a pod the provisioner plans has no cpu or
	// memory requests, so its node may be too small (joiner's; Karpenter
	// plans such pods silently).
	NoResourceRequests = "NoResourceRequests"
	// NominationEnded: the NodeClaim a pod was planned for filled up,
	// failed or went away before the pod bound; the pod is planned again.
	NominationEnded = "NominationEnded"

	// NodeClaim launch.
	Launched                  = "Launched"
	LaunchFailed              = "LaunchFailed"
	InsufficientCapacityError = "InsufficientCapacityError"
	NodeClassNotReady         = "NodeClassNotReady"

	// NodeClaim registration and initialization.
	Registered               = "Registered"
	Initialized              = "Initialized"
	UnregisteredTaintMissing = "UnregisteredTaintMissing"
	StartupTaintsMissing     = "StartupTaintsMissing"
	ArchitectureMismatch     = "ArchitectureMismatch"
	MultipleNodesFound       = "MultipleNodesFound"
	LegacyUninitializedTaint = "LegacyUninitializedTaint"
	ExtendedResourceMissing  = "ExtendedResourceMissing"

	// NodeClaim liveness.
	LaunchTimeout       = "LaunchTimeout"
	RegistrationTimeout = "RegistrationTimeout"

	// Node / NodeClaim termination.
	NodeDeleted       = "NodeDeleted"
	FailedDraining    = "FailedDraining"
	FailedTermination = "FailedTermination"
	Evicted           = "Evicted"
	Disrupted         = "Disrupted"

	// NodeClaim initialization timeout (joiner's: Karpenter deletes the
	// NodeClaim silently).
	InitializationTimeout = "InitializationTimeout"

	// Forceful disruption: expiration and node repair.
	Expired           = "Expired"
	Unhealthy         = "Unhealthy"
	NodeRepairBlocked = "NodeRepairBlocked"

	// Voluntary disruption (emptiness, drift, consolidation).
	DisruptionBlocked = "DisruptionBlocked"
	Unconsolidatable  = "Unconsolidatable"
	// OwnerlessPods: a disruption candidate runs pods with no controller
	// owner, which disrupting it deletes for good (joiner's warning;
	// Karpenter says nothing and does not block either).
	OwnerlessPods = "OwnerlessPods"
	// OwnerlessPodEvicted: the drain evicted (or deleted) a pod with no
	// controller owner; nothing will recreate it (joiner's).
	OwnerlessPodEvicted        = "OwnerlessPodEvicted"
	DisruptionLaunching        = "DisruptionLaunching"
	DisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	DisruptionTerminating      = "DisruptionTerminating"
	// DriftHalted: replacements of a drifted NodePool failed to initialise,
	// so drift stopped for it (joiner's).
	DriftHalted = "DriftHalted"

	// NodePool.
	NoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	// ScaledUp and ScaledDown: a static NodePool (spec.replicas) created
	// or deleted NodeClaims to match its replicas (joiner's; Karpenter
	// only logs it).
	ScaledUp   = "ScaledUp"
	ScaledDown = "ScaledDown"

	// FeatureGateDisabled: an object that needs one of Karpenter's alpha
	// feature gates (StaticCapacity, NodeOverlay, CapacityBuffer) is left
	// alone while the gate is off; the message names the gate (joiner's).
	FeatureGateDisabled = "FeatureGateDisabled"

	// LaunchBackoff: launches of a NodePool's instance type or image that
	// failed to register or initialise wait before the next attempt; on
	// the NodePool and on the pods that wait for it (joiner's).
	LaunchBackoff = "LaunchBackoff"
	// LaunchBackoffReset: what a back-off's cause names changed (such as
	// kube-system/aws-auth), so the back-off ended early (joiner's).
	LaunchBackoffReset = "LaunchBackoffReset"
	// RegistrationBlocked: the cloud provider named why a launched
	// NodeClaim's Node cannot register (a node role aws-auth does not map),
	// before the registration TTL; on the NodeClaim, its NodePool and the
	// pods waiting for it (joiner's).
	RegistrationBlocked = "RegistrationBlocked"
	// ClusterNamesake: another cluster's instances carry this cluster's
	// name (seed 004); on the node classes (joiner's).
	ClusterNamesake = "ClusterNamesake"
)
