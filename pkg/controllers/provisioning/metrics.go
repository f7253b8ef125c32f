package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"
)

// These mirror the definitions pkg/metrics will own; they live here until
// it lands on main.
var (
	podsPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "pending",
		Help: "Number of unschedulable pods waiting for capacity, as last seen by the provisioner.",
	})
	solverDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help:    "Duration of one scheduling simulation (solver run) in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of NodeClaims created, by NodePool and reason.",
	}, []string{"nodepool"})
)
