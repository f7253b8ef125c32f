package disruption

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Label names of the disruption metrics (Karpenter's).
const (
	labelDecision          = "decision"
	labelConsolidationType = "consolidation_type"
	labelMethod            = "method"
)

var (
	// decisionsTotal counts commands carried out (after validation), by
	// decision (delete, replace), reason and consolidation type.
	decisionsTotal = metrics.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Number of disruption decisions performed, by decision, reason and consolidation type.",
	}, labelDecision, metrics.LabelReason, labelConsolidationType)

	// eligibleNodes is the number of nodes a method may consider now, by
	// reason.
	eligibleNodes = metrics.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "voluntary_disruption", Name: "eligible_nodes",
		Help: "Number of nodes eligible for disruption, by reason.",
	}, metrics.LabelReason)

	// failedValidations counts commands dropped by the 15 s re-check.
	failedValidations = metrics.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "voluntary_disruption", Name: "failed_validations_total",
		Help: "Number of disruption commands that failed validation, by decision, reason and consolidation type.",
	}, labelDecision, metrics.LabelReason, labelConsolidationType)

	// queueFailures counts commands rolled back because a replacement
	// could not be created or did not initialise in time.
	queueFailures = metrics.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "voluntary_disruption", Name: "queue_failures_total",
		Help: "Number of disruption commands rolled back by the queue, by decision, reason and consolidation type.",
	}, labelDecision, metrics.LabelReason, labelConsolidationType)

	// decisionDuration is how long one Decide call took.
	// It is labeled by the method and consolidation type of the command
	// the decision found (method "none" when it found none).
	decisionDuration = metrics.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
		Help:    "Duration of one disruption decision (every method) in seconds, by the method and consolidation type of the command it found.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, labelMethod, labelConsolidationType)

	// allowedDisruptions is the budget left per NodePool per reason.
	allowedDisruptions = metrics.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "Number of nodes that may be disrupted now, by NodePool and reason.",
	}, metrics.LabelNodePool, metrics.LabelReason)

	// evictionsTotal counts the workload pods voluntary disruption evicted
	// (the reschedulable pods of the candidates it deleted).
	evictionsTotal = metrics.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.JoinerNamespace, Subsystem: "voluntary_disruption", Name: "evictions_total",
		Help: "Number of workload pods evicted by voluntary disruption, by NodePool and reason.",
	}, metrics.LabelNodePool, metrics.LabelReason)

	// evictionsLastHour is evictionsTotal over the trailing hour: the churn
	// consolidation causes, as users watch it.
	evictionsLastHour = metrics.NewGauge(prometheus.GaugeOpts{
		Namespace: metrics.JoinerNamespace, Subsystem: "voluntary_disruption", Name: "evictions_last_hour",
		Help: "Number of workload pods evicted by voluntary disruption in the trailing hour.",
	})
)
