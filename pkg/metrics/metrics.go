package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric Karpenter also has (Karpenter's, for
// compatibility).
const Namespace = "karpenter"

// JoinerNamespace prefixes joiner's own additions, those Karpenter has no
// metric for.
const JoinerNamespace = "joiner"

// Label names, Karpenter's.
const (
	LabelNodePool     = "nodepool"
	LabelReason       = "reason"
	LabelMethod       = "method"
	LabelError        = "error"
	LabelPhase        = "phase"
	LabelController   = "controller"
	LabelProvider     = "provider"
	LabelCapacityType = "capacity_type"
	LabelInstanceType = "instance_type"
	LabelZone         = "zone"
	LabelArch         = "arch"
	LabelOS           = "os"
	LabelRegion       = "region"
	LabelResourceType = "resource_type"
	LabelNodeName     = "node_name"
	// LabelCondition is the node condition a repair acted on.
	LabelCondition = "condition"
	// LabelMinValuesRelaxed is "true" when MIN_VALUES_POLICY=BestEffort
	// lowered the NodeClaim's minValues.
	LabelMinValuesRelaxed = "min_values_relaxed"
	// LabelCode is the HTTP status of an eviction request or an AWS call.
	LabelCode = "code"
	// LabelSchedulingID names one scheduling simulation.
	LabelSchedulingID = "scheduling_id"
)

// Values of LabelReason on NodeClaimsDisrupted for the forceful methods
// (voluntary disruption adds its own: empty, underutilized, drifted).
const (
	DisruptionReasonExpired   = "expired"
	DisruptionReasonUnhealthy = "unhealthy"
)

// NodeLabels are the labels of the per-node gauges (karpenter_nodes_*):
// the node, its NodePool, the resource, whether the node is Ready, and the
// well-known labels of the node.
var NodeLabels = []string{LabelNodeName, LabelNodePool, LabelResourceType, LabelPhase, LabelArch, LabelCapacityType, LabelInstanceType, LabelZone, LabelOS, LabelRegion}

// PodStateLabels are karpenter_pods_state's labels.
var PodStateLabels = []string{"name", "namespace", "owner", "node", LabelNodePool, LabelZone, LabelArch, LabelCapacityType, LabelInstanceType, LabelPhase}

var durationBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// lifetimeBuckets span a minute to a month, for node lifetimes and slow
// terminations.
var lifetimeBuckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200, 86400, 259200, 604800, 2592000}

// NodeClaims.
var (
	// NodeClaimsCreated counts NodeClaims created, by the reason they were
	// created ("provisioning", or the disruption reason of a replacement),
	// NodePool and whether minValues were relaxed.
	NodeClaimsCreated = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of nodeclaims created in total, by the reason the nodeclaim was created, its nodepool and whether minValues were relaxed.",
	}, LabelReason, LabelNodePool, LabelMinValuesRelaxed)

	// NodeClaimsTerminated counts NodeClaims whose deletion finished (the
	// instance is gone and the finalizer removed).
	NodeClaimsTerminated = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of nodeclaims terminated in total, by nodepool and capacity type.",
	}, LabelNodePool, LabelCapacityType)

	// NodeClaimsDisrupted counts NodeClaims joiner deleted to disrupt them.
	NodeClaimsDisrupted = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "Number of nodeclaims disrupted in total, by reason, nodepool and capacity type.",
	}, LabelReason, LabelNodePool, LabelCapacityType)

	// NodeClaimsUnhealthyDisrupted counts NodeClaims node repair deleted.
	NodeClaimsUnhealthyDisrupted = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
		Help: "Number of unhealthy nodeclaims disrupted in total by node repair, by node condition, nodepool and capacity type.",
	}, LabelCondition, LabelNodePool, LabelCapacityType)

	// NodeClaimsTerminationDuration is the time from a NodeClaim's deletion
	// to its finalizer's removal.
	NodeClaimsTerminationDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "termination_duration_seconds",
		Help: "Duration of nodeclaim termination in seconds, from its deletion to its finalizer's removal, by nodepool.", Buckets: lifetimeBuckets,
	}, LabelNodePool)

	// NodeClaimsInstanceTerminationDuration is the time from the first
	// request to terminate a NodeClaim's instance to the cloud reporting
	// it gone.
	NodeClaimsInstanceTerminationDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "instance_termination_duration_seconds",
		Help: "Duration of cloud provider instance termination in seconds, by nodepool.", Buckets: lifetimeBuckets,
	}, LabelNodePool)

	// NodeClaimsLaunched counts NodeClaims whose instance the cloud launched.
	NodeClaimsLaunched = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "launched_total",
		Help: "Number of nodeclaims launched by the cloud provider, by nodepool.",
	}, LabelNodePool)

	// NodeClaimsRegistered counts NodeClaims whose Node joined the cluster.
	NodeClaimsRegistered = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "registered_total",
		Help: "Number of nodeclaims whose node registered, by nodepool.",
	}, LabelNodePool)

	// NodeClaimsInitialized counts NodeClaims whose Node became ready for pods.
	NodeClaimsInitialized = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "initialized_total",
		Help: "Number of nodeclaims initialized, by nodepool.",
	}, LabelNodePool)

	// NodeClaimsLaunchFailed counts NodeClaims deleted because the cloud
	// could not launch them ("insufficient_capacity", "nodeclass_not_ready").
	NodeClaimsLaunchFailed = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "launch_failed_total",
		Help: "Number of nodeclaims deleted because the cloud could not launch them, by nodepool and reason.",
	}, LabelNodePool, LabelReason)

	// NodeClaimsLivenessExpired counts NodeClaims deleted because they did
	// not launch, register or initialize in time; phase is "launch",
	// "registration" or "initialization".
	NodeClaimsLivenessExpired = NewCounterVec(prometheus.CounterOpts{
		Namespace: JoinerNamespace, Subsystem: "nodeclaims", Name: "liveness_expired_total",
		Help: "Number of nodeclaims deleted because they did not launch, register or initialize within their TTL, by nodepool and phase.",
	}, LabelNodePool, LabelPhase)
)

// Nodes.
var (
	// NodesCreated counts Nodes of joiner's NodeClaims that registered.
	NodesCreated = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "created_total",
		Help: "Number of nodes created in total, by nodepool.",
	}, LabelNodePool)
	// NodesTerminated counts Nodes whose termination finalizer joiner removed.
	NodesTerminated = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "terminated_total",
		Help: "Number of nodes terminated in total, by nodepool.",
	}, LabelNodePool)
	// NodesDrained counts Nodes joiner finished draining.
	NodesDrained = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "drained_total",
		Help: "Number of nodes drained in total, by nodepool.",
	}, LabelNodePool)
	// NodesEvictionRequests counts eviction requests by HTTP status code.
	NodesEvictionRequests = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "eviction_requests_total",
		Help: "Number of eviction requests made while draining nodes, by response code.",
	}, LabelCode)
	// NodesTerminationDuration is the time from a Node's deletion to its
	// finalizer's removal.
	NodesTerminationDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "termination_duration_seconds",
		Help: "The time taken between a node's deletion request and the removal of its finalizer, by nodepool.", Buckets: lifetimeBuckets,
	}, LabelNodePool)
	// NodesLifetimeDuration is a terminated Node's age.
	NodesLifetimeDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "lifetime_duration_seconds",
		Help: "The lifetime of nodes from creation to termination, by nodepool.", Buckets: lifetimeBuckets,
	}, LabelNodePool)
	// NodesCurrentLifetime is each live Node's age.
	NodesCurrentLifetime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "current_lifetime_seconds",
		Help: "Node age in seconds, by node and nodepool.",
	}, LabelNodeName, LabelNodePool)

	NodesAllocatable = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "allocatable",
		Help: "Node allocatable are the resources allocatable by nodes.",
	}, NodeLabels...)
	NodesSystemOverhead = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "system_overhead",
		Help: "Node system daemon overhead: the difference between the node's capacity and allocatable.",
	}, NodeLabels...)
	NodesTotalPodRequests = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "total_pod_requests",
		Help: "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.",
	}, NodeLabels...)
	NodesTotalPodLimits = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "total_pod_limits",
		Help: "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.",
	}, NodeLabels...)
	NodesTotalDaemonRequests = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "total_daemon_requests",
		Help: "Node total daemon requests are the resources requested by DaemonSet pods bound to nodes.",
	}, NodeLabels...)
	NodesTotalDaemonLimits = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodes", Name: "total_daemon_limits",
		Help: "Node total daemon limits are the resources specified by DaemonSet pod limits.",
	}, NodeLabels...)
)

// Pods.
var (
	PodsState = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "state",
		Help: "Pod state is the current state of pods, labeled by the pod name, namespace, owner, node, nodepool, zone, architecture, capacity type, instance type and pod phase.",
	}, PodStateLabels...)
	PodsStartupDuration = NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "startup_duration_seconds",
		Help: "The time from pod creation until the pod is ready.", Buckets: lifetimeBuckets,
	})
	// PodsUnboundTime and PodsUnstartedTime are Karpenter's per-pod
	// waiting gauges: how long a pod not yet bound, or bound but not yet
	// running, has existed.
	PodsUnboundTime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "unbound_time_seconds",
		Help: "The time from pod creation until the pod is bound, for pods not bound yet.",
	}, "name", "namespace")
	PodsUnstartedTime = NewSeries(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "unstarted_time_seconds",
		Help: "The time from pod creation until the pod is running, for bound pods not running yet.",
	}, "name", "namespace")
	PodsBoundDuration = NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "bound_duration_seconds",
		Help: "The time from pod creation until the pod is bound to a node.", Buckets: lifetimeBuckets,
	})
	// PodsPending is the number of pending (unschedulable) pods the
	// provisioner last saw.
	PodsPending = NewGauge(prometheus.GaugeOpts{
		Namespace: JoinerNamespace, Subsystem: "pods", Name: "pending",
		Help: "Number of unschedulable pods waiting for capacity, as last seen by the provisioner.",
	})
	// PodsUnschedulable is how many pods the last batch could not place,
	// by reason kind (the solver's typed reasons: Taint, Limit,
	// InsufficientResource, ...). A pod counts once for every distinct kind
	// among its NodePools' and existing nodes' reasons, so the series sum
	// to more than UnschedulablePodsCount when pools disagree. Karpenter
	// has no per-reason metric, hence joiner's own name.
	PodsUnschedulable = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: JoinerNamespace, Subsystem: "pods", Name: "unschedulable",
		Help: "Number of pods the provisioner's last batch could not place, by reason kind (a pod counts once per distinct kind).",
	}, LabelReason)
)

// NodePools and the cluster.
var (
	NodePoolsUsage = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodepools", Name: "usage",
		Help: "The amount of resources that have been provisioned for a nodepool, by nodepool and resource type.",
	}, LabelNodePool, LabelResourceType)
	NodePoolsLimit = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodepools", Name: "limit",
		Help: "Limits specified on the nodepool that restrict the quantity of resources provisioned, by nodepool and resource type.",
	}, LabelNodePool, LabelResourceType)
	// NodePoolsCost is what a NodePool's nodes cost per hour, the sum of
	// their offerings' prices.
	NodePoolsCost = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "nodepools", Name: "cost_total",
		Help: "Total cost of the nodepool per hour from joiner's perspective: the sum of its nodes' offering prices, in the cloud provider's unit. Not an authoritative source for billing.",
	}, LabelNodePool)
	// NodePoolsCostTrackerErrors counts nodes whose price could not be
	// found when the NodePool's cost was summed (an offering the cloud no
	// longer lists).
	NodePoolsCostTrackerErrors = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodepools", Name: "cost_tracker_errors_total",
		Help: "Number of errors encountered during cost tracking: nodes whose offering price was not found, by nodepool.",
	}, LabelNodePool)
	ClusterUtilization = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster", Name: "utilization_percent",
		Help: "Utilization of allocatable resources by pod requests, by resource type.",
	}, LabelResourceType)
	// ClusterStateSynced is 1 when the cluster state has seen every Node and
	// NodeClaim the API server has, else 0.
	ClusterStateSynced = NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster_state", Name: "synced",
		Help: "Returns 1 if cluster state is synced and 0 otherwise: nodeclaims and nodes in the API server have the same representation as in the cluster state.",
	})
	ClusterStateUnsyncedTime = NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster_state", Name: "unsynced_time_seconds",
		Help: "The time for which cluster state has not been synced.",
	})
	// ClusterStateNodeCount is the number of nodes (Nodes and in-flight
	// NodeClaims) the cluster state tracks.
	ClusterStateNodeCount = NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster_state", Name: "node_count",
		Help: "Current count of nodes in cluster state.",
	})
)

// Scheduler.
var (
	// SolverDuration is how long one scheduling simulation took.
	SolverDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help: "Duration of scheduling simulations used for deprovisioning and provisioning in seconds, by controller.", Buckets: durationBuckets,
	}, LabelController)
	// SchedulerQueueDepth is the number of pods in the batch being planned.
	SchedulerQueueDepth = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "queue_depth",
		Help: "The number of pods currently waiting to be scheduled, by controller.",
	}, LabelController)
	// SchedulerUnfinishedWork is how long each scheduling simulation still
	// running has been running, by controller and a per-simulation id; the
	// series goes when the simulation ends.
	SchedulerUnfinishedWork = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "unfinished_work_seconds",
		Help: "How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds, by controller and scheduling id.",
	}, LabelController, LabelSchedulingID)
	// UnschedulablePodsCount is how many pods the last batch could not
	// place, by the controller that ran the simulation ("provisioner").
	UnschedulablePodsCount = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "unschedulable_pods_count",
		Help: "The number of unschedulable pods, by controller.",
	}, LabelController)
	// IgnoredPods is Karpenter's count of pending pods it passes over
	// (invalid affinity to its labels, unsupported volumes). joiner passes
	// over none, such pods go to the solver and get a typed reason, so it
	// stays 0; it is served so Karpenter's dashboards find it.
	IgnoredPods = NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "ignored_pod_count",
		Help: "Number of pods ignored during scheduling.",
	})
)

// Cloud provider.
var (
	// CloudProviderDuration is the latency of each cloud provider call.
	CloudProviderDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "duration_seconds",
		Help: "Duration of cloud provider method calls, by controller, method name and provider.", Buckets: durationBuckets,
	}, LabelController, LabelMethod, LabelProvider)
	// CloudProviderErrors counts failed cloud provider calls by error kind.
	CloudProviderErrors = NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "errors_total",
		Help: "Total number of errors returned from cloud provider calls, by controller, method, provider and error kind.",
	}, LabelController, LabelMethod, LabelProvider, LabelError)
	InstanceTypeCPUCores = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "instance_type_cpu_cores",
		Help: "VCPUs cores for a given instance type.",
	}, LabelInstanceType)
	InstanceTypeMemoryBytes = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "instance_type_memory_bytes",
		Help: "Memory, in bytes, for a given instance type.",
	}, LabelInstanceType)
	InstanceTypeOfferingAvailable = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "instance_type_offering_available",
		Help: "Instance type offering availability, based on instance type, capacity type, and zone.",
	}, LabelInstanceType, LabelCapacityType, LabelZone)
	InstanceTypeOfferingPrice = NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "instance_type_offering_price_estimate",
		Help: "Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.",
	}, LabelInstanceType, LabelCapacityType, LabelZone)
	// BatcherBatchSize and BatcherBatchTime describe the AWS provider's
	// request batchers (batcher is the API they batch).
	BatcherBatchSize = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "cloudprovider_batcher", Name: "batch_size",
		Help: "Size of the request batch per batcher.", Buckets: []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 100, 200, 500},
	}, "batcher")
	BatcherBatchTime = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "cloudprovider_batcher", Name: "batch_time_seconds",
		Help: "Duration of the batching window per batcher.", Buckets: durationBuckets,
	}, "batcher")
)

// BuildInfo is 1, labeled by the version joiner was built from.
var BuildInfo = NewGaugeVec(prometheus.GaugeOpts{
	Namespace: Namespace, Name: "build_info",
	Help: "A metric with a constant '1' value labeled by version from which the controller was built.",
}, "version", "goversion", "goarch", "commit")

func init() {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	BuildInfo.WithLabelValues(version, runtime.Version(), runtime.GOARCH, commit).Set(1)
}

// SetUnschedulable publishes one batch's unschedulable pods for a
// controller: the total, and per reason kind how many pods have it. Every
// kind in kinds is set, to zero when no pod has it, so a reason that went
// away reads 0 instead of its last value.
func SetUnschedulable(controller string, total int, byKind map[string]int, kinds []string) {
	UnschedulablePodsCount.WithLabelValues(controller).Set(float64(total))
	for _, k := range kinds {
		PodsUnschedulable.WithLabelValues(k).Set(float64(byKind[k]))
	}
}

// ObserveCloudProviderCall records one cloud provider call: its duration
// and, when it failed, its error kind. errKind is "" for success, otherwise
// a short, bounded name for the error class (e.g. "InsufficientCapacity",
// "NotFound", "NodeClassNotReady", "Other"); never an error message,
// which would make label cardinality unbounded.
func ObserveCloudProviderCall(controller, method, provider string, seconds float64, errKind string) {
	CloudProviderDuration.WithLabelValues(controller, method, provider).Observe(seconds)
	if errKind != "" {
		CloudProviderErrors.WithLabelValues(controller, method, provider, errKind).Inc()
	}
}
