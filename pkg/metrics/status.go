package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// OperatorNamespace prefixes the status condition and termination metrics
// Karpenter gets from awslabs/operatorpkg's status controller (one set per
// kind: operator_nodeclaim_status_condition_count, ...).
const OperatorNamespace = "operator"

// Label names of the status condition metrics, operatorpkg's.
const (
	LabelNamespace       = "namespace"
	LabelName            = "name"
	LabelConditionType   = "type"
	LabelConditionStatus = "status"
	// LabelToStatus is the status a condition moved to; status is the one
	// it left.
	LabelToStatus = "to_status"
)

// StatusMetrics are one kind's status condition and termination metrics.
type StatusMetrics struct {
	// Kind is the lower-case kind the metrics are named after.
	Kind string
	// Objects are the per-object gauges: 1 for each condition an object
	// has now, by its type, status and reason; how long each condition has
	// had its current status; how long each deleting object has been
	// terminating.
	Objects *ObjectStatus
	// ConditionTransitions counts transitions, by the status moved to.
	ConditionTransitions *prometheus.CounterVec
	// ConditionTransitionSeconds is how long a condition kept a status
	// before it changed.
	ConditionTransitionSeconds *prometheus.HistogramVec
	// TerminationDuration is how long objects took to go once deleted.
	TerminationDuration prometheus.Histogram
}

// newStatusMetrics defines a kind's metrics under namespace: operator_ for
// the kinds Karpenter has, joiner_ for joiner's own (SimNodeClass); buckets
// are the transition and termination histograms'.
func newStatusMetrics(namespace, kind string, buckets []float64) *StatusMetrics {
	kind = strings.ToLower(kind)
	return &StatusMetrics{
		Kind:    kind,
		Objects: newObjectStatus(namespace, kind),
		ConditionTransitions: NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: kind + "_status_condition", Name: "transitions_total",
			Help: "The count of transitions of a " + kind + "'s conditions, by type, the status moved to and its reason.",
		}, LabelConditionType, LabelConditionStatus, LabelReason),
		ConditionTransitionSeconds: NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: kind + "_status_condition", Name: "transition_seconds",
			Help: "The amount of time a condition of a " + kind + " was in a given state (status) before transitioning to another state (to_status).", Buckets: buckets,
		}, LabelConditionType, LabelConditionStatus, LabelToStatus),
		TerminationDuration: NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: kind + "_termination", Name: "duration_seconds",
			Help: "The amount of time taken by a " + kind + " to terminate completely, from its deletion.", Buckets: buckets,
		}),
	}
}

// The kinds whose conditions are published. Karpenter's (operatorpkg's
// names) for its kinds; the SimNodeClass is joiner's, so its metrics are
// joiner_simnodeclass_*.
var (
	NodeClaimStatus    = newStatusMetrics(OperatorNamespace, "NodeClaim", lifetimeBuckets)
	NodePoolStatus     = newStatusMetrics(OperatorNamespace, "NodePool", lifetimeBuckets)
	NodeStatus         = newStatusMetrics(OperatorNamespace, "Node", lifetimeBuckets)
	EC2NodeClassStatus = newStatusMetrics(OperatorNamespace, "EC2NodeClass", lifetimeBuckets)
	SimNodeClassStatus = newStatusMetrics(JoinerNamespace, "SimNodeClass", lifetimeBuckets)
	// KWOKNodeClassStatus: Karpenter's kwok provider publishes its node
	// class's conditions under operatorpkg's names too.
	KWOKNodeClassStatus = newStatusMetrics(OperatorNamespace, "KWOKNodeClass", lifetimeBuckets)
	// CapacityBufferStatus: with the CapacityBuffer gate on, Karpenter
	// publishes the buffers' conditions (ReadyForProvisioning,
	// Provisioning, LimitedByQuotas) under operatorpkg's names, its
	// histograms in buckets of 0.5 s doubling 15 times.
	CapacityBufferStatus = newStatusMetrics(OperatorNamespace, "CapacityBuffer", prometheus.ExponentialBuckets(0.5, 2, 15))
)

// StatusMetricsFor returns the metrics of a kind ("NodeClaim",
// "EC2NodeClass", ...), nil for a kind that has none.
func StatusMetricsFor(kind string) *StatusMetrics {
	for _, m := range []*StatusMetrics{NodeClaimStatus, NodePoolStatus, NodeStatus, EC2NodeClassStatus, SimNodeClassStatus, KWOKNodeClassStatus, CapacityBufferStatus} {
		if m.Kind == strings.ToLower(kind) {
			return m
		}
	}
	return nil
}
