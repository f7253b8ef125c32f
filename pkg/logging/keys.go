package logging

// The keys of joiner's structured logs, in one place. A log line names
// what it is about with these keys and no other spelling, so a query
// written for one controller's lines finds every controller's.
//
// Objects are logged as Karpenter and controller-runtime log them: under
// their Kind (NodeClaim, NodePool, Node, Pod, ...) with a klog object
// reference, which renders as {"name": ..., "namespace": ...}. A query such
// as `select(.NodeClaim.name == "default-x7k2p")` written for Karpenter's
// logs therefore finds joiner's lines too, and controller-runtime's
// reconcile loggers already carry the reconciled object under the same
// key. Every other key is lower-case and hyphenated (provider-id,
// instance-type), as Karpenter's are.
//
// keys_test.go fails when a log call anywhere in the tree writes a key as
// a string literal instead of one of these constants.
const (
	// Objects, valued klog.KObj(obj) or klog.KRef(namespace, name).
	NodeClaim           = "NodeClaim"
	NodePool            = "NodePool"
	Node                = "Node"
	Pod                 = "Pod"
	ProvisioningRequest = "ProvisioningRequest"
	CapacityBuffer      = "CapacityBuffer"

	// The cloud's side of a node.
	ProviderID     = "provider-id"
	Instance       = "instance"
	InstanceType   = "instance-type"
	InstanceTypes  = "instance-types"
	CapacityType   = "capacity-type"
	Zone           = "zone"
	Region         = "region"
	ClusterName    = "cluster-name"
	ClusterID      = "cluster-id"
	OtherClusterID = "other-cluster-id"

	// Why and how: outcomes, causes and errors (an Info line carries its
	// error under Error; logr's Error lines carry it themselves).
	Error     = "error"
	Reason    = "reason"
	Reasons   = "reasons"
	Message   = "message"
	Detail    = "detail"
	Condition = "condition"
	Status    = "status"
	Phase     = "phase"
	Decision  = "decision"
	Method    = "method"
	Regarding = "regarding"

	// Counts, lists and sizes.
	Count            = "count"
	Pods             = "pods"
	NodeClaims       = "nodeclaims"
	Candidates       = "candidates"
	Replacements     = "replacements"
	Virtual          = "virtual"
	Conflicts        = "conflicts"
	Replicas         = "replicas"
	Current          = "current"
	Desired          = "desired"
	Limit            = "limit"
	ProvisionCount   = "provision-count"
	DeprovisionCount = "deprovision-count"
	Requests         = "requests"
	SavingsPerHour   = "savings-per-hour"
	Nodes            = "nodes"
	Deleting         = "deleting"
	Disrupting       = "disrupting"
	NotReady         = "not-ready"

	// Time.
	Age      = "age"
	Deadline = "deadline"
	Duration = "duration"
	RetryIn  = "retry-in"

	// What a line's subject belongs to or came from.
	Group       = "group"
	GroupLaunch = "group-launch"
	Class       = "class"
	Hash        = "hash"
	Previous    = "previous"
	Queue       = "queue"
	MessageID   = "message-id"
	MessageType = "message-type"
	Table       = "table"
	URL         = "url"

	// Settings, as the startup line reports them (named as their flags).
	CloudProvider           = "cloud-provider"
	BatchIdleDuration       = "batch-idle-duration"
	BatchMaxDuration        = "batch-max-duration"
	RegistrationTTL         = "registration-ttl"
	InitializationTTL       = "initialization-ttl"
	LaunchBackoffMax        = "launch-backoff-max"
	UnavailableOfferingsTTL = "unavailable-offerings-ttl"
	FeatureGates            = "feature-gates"
	LeaderElection          = "leader-election"
	LeaderElectionName      = "leader-election-name"
	PreferencePolicy        = "preference-policy"
	MinValuesPolicy         = "min-values-policy"
	PriceModel              = "price-model"
)
