package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Namespace prefixes every metric Karpenter also has (Karpenter's, for
// compatibility).
const Namespace = "karpenter"

// JoinerNamespace prefixes joiner's own additions, those Karpenter has no
// metric for.
const JoinerNamespace = "joiner"

// Label names used across metrics.
const (
	LabelNodePool   = "nodepool"
	LabelReason     = "reason"
	LabelMethod     = "method"
	LabelError      = "error"
	LabelPhase      = "phase"
	LabelController = "controller"
	// LabelCapacityType is the capacity type of a node (spot, on-demand,
	// reserved), Karpenter's capacity_type label.
	LabelCapacityType = "capacity_type"
	// LabelCondition is the node condition a repair acted on.
	LabelCondition = "condition"
)

// Values of LabelReason on NodeClaimsDisrupted for the forceful methods
// (voluntary disruption adds its own: empty, underutilized, drifted).
const (
	DisruptionReasonExpired   = "expired"
	DisruptionReasonUnhealthy = "unhealthy"
)

var (
	// NodeClaimsCreated counts NodeClaims created, by NodePool and the
	// reason they were created (e.g. "provisioning").
	NodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of NodeClaims created, by NodePool and reason.",
	}, []string{LabelNodePool, LabelReason})

	// NodeClaimsLaunched counts NodeClaims whose instance the cloud launched.
	NodeClaimsLaunched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "launched_total",
		Help: "Number of NodeClaims launched by the cloud provider, by NodePool.",
	}, []string{LabelNodePool})

	// NodeClaimsRegistered counts NodeClaims whose Node joined the cluster.
	NodeClaimsRegistered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "registered_total",
		Help: "Number of NodeClaims whose Node registered, by NodePool.",
	}, []string{LabelNodePool})

	// NodeClaimsInitialized counts NodeClaims whose Node became ready for pods.
	NodeClaimsInitialized = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "initialized_total",
		Help: "Number of NodeClaims initialized, by NodePool.",
	}, []string{LabelNodePool})

	// NodeClaimsTerminated counts NodeClaims whose deletion finished (the
	// instance is gone and the finalizer removed), by NodePool.
	NodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of NodeClaims terminated, by NodePool.",
	}, []string{LabelNodePool})

	// NodeClaimsLaunchFailed counts NodeClaims deleted because the cloud
	// could not launch them, by NodePool and reason
	// ("insufficient_capacity", "nodeclass_not_ready").
	NodeClaimsLaunchFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "launch_failed_total",
		Help: "Number of NodeClaims deleted because the cloud could not launch them, by NodePool and reason.",
	}, []string{LabelNodePool, LabelReason})

	// NodeClaimsLivenessExpired counts NodeClaims deleted because they did
	// not launch, register or initialize in time; phase is "launch",
	// "registration" or "initialization".
	NodeClaimsLivenessExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "liveness_expired_total",
		Help: "Number of NodeClaims deleted because they did not launch, register or initialize within their TTL, by NodePool and phase.",
	}, []string{LabelNodePool, LabelPhase})

	// NodeClaimsDisrupted counts NodeClaims joiner deleted to disrupt
	// them, by reason, NodePool and capacity type (Karpenter's
	// karpenter_nodeclaims_disrupted_total).
	NodeClaimsDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "Number of NodeClaims disrupted, by reason, NodePool and capacity type.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType})

	// NodeClaimsUnhealthyDisrupted counts NodeClaims node repair deleted,
	// by the node condition that was bad, NodePool and capacity type
	// (Karpenter's karpenter_nodeclaims_unhealthy_disrupted_total).
	NodeClaimsUnhealthyDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
		Help: "Number of NodeClaims deleted by node repair, by node condition, NodePool and capacity type.",
	}, []string{LabelCondition, LabelNodePool, LabelCapacityType})

	// PodsPending is the number of pending (unschedulable) pods the
	// provisioner last saw.
	PodsPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "pods", Name: "pending",
		Help: "Number of unschedulable pods waiting for capacity, as last seen by the provisioner.",
	})

	// UnschedulablePodsCount is how many pods the last batch could not
	// place, by the controller that ran the simulation ("provisioner").
	UnschedulablePodsCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "unschedulable_pods_count",
		Help: "The number of unschedulable Pods.",
	}, []string{LabelController})

	// PodsUnschedulable is how many pods the last batch could not place,
	// by reason kind (the solver's typed reasons: Taint, Limit,
	// InsufficientResource, ...). A pod counts once for every distinct kind
	// among its NodePools' and existing nodes' reasons, so the series sum
	// to more than UnschedulablePodsCount when pools disagree. Karpenter
	// has no per-reason metric, hence joiner's own name.
	PodsUnschedulable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: JoinerNamespace, Subsystem: "pods", Name: "unschedulable",
		Help: "Number of pods the provisioner's last batch could not place, by reason kind (a pod counts once per distinct kind).",
	}, []string{LabelReason})

	// SolverDuration is how long one scheduling simulation took.
	SolverDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help:    "Duration of one scheduling simulation (solver run) in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})

	// CloudProviderDuration is the latency of each cloud provider call.
	CloudProviderDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "duration_seconds",
		Help:    "Duration of cloud provider method calls in seconds, by method.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{LabelMethod})

	// CloudProviderCalls counts cloud provider calls by method and error kind
	// ("" on success).
	CloudProviderCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: "cloudprovider", Name: "calls_total",
		Help: "Number of cloud provider method calls, by method and error kind (empty on success).",
	}, []string{LabelMethod, LabelError})

	// ClusterStateSynced is 1 when the cluster state has seen every Node and
	// NodeClaim the API server has, else 0.
	ClusterStateSynced = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster_state", Name: "synced",
		Help: "1 when the cluster state has seen every Node and NodeClaim the API server holds, else 0.",
	})

	// ClusterStateNodeCount is the number of nodes (Nodes and in-flight
	// NodeClaims) the cluster state tracks.
	ClusterStateNodeCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "cluster_state", Name: "node_count",
		Help: "Number of Nodes and in-flight NodeClaims tracked by the cluster state.",
	})
)

func init() {
	crmetrics.Registry.MustRegister(
		NodeClaimsCreated, NodeClaimsLaunched, NodeClaimsRegistered, NodeClaimsInitialized,
		NodeClaimsTerminated, NodeClaimsLaunchFailed, NodeClaimsLivenessExpired,
		NodeClaimsDisrupted, NodeClaimsUnhealthyDisrupted,
		PodsPending, SolverDuration, UnschedulablePodsCount, PodsUnschedulable,
		CloudProviderDuration, CloudProviderCalls,
		ClusterStateSynced, ClusterStateNodeCount,
	)
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
// and its outcome. errKind is "" for success, otherwise a short, bounded
// name for the error class (e.g. "InsufficientCapacity", "NotFound",
// "NodeClassNotReady", "Other"); never an error message, which would make
// label cardinality unbounded.
func ObserveCloudProviderCall(method string, seconds float64, errKind string) {
	CloudProviderDuration.WithLabelValues(method).Observe(seconds)
	CloudProviderCalls.WithLabelValues(method, errKind).Inc()
}
