package interruption

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// LabelMessageType is the message kind label of the interruption metrics.
const LabelMessageType = "message_type"

// Karpenter's interruption metrics (reference §4.4).
var (
	ReceivedMessages = metrics.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "interruption", Name: "received_messages_total",
		Help: "Number of messages received from the interruption queue, by message type (unknown: it did not parse).",
	}, LabelMessageType)
	DeletedMessages = metrics.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: "interruption", Name: "deleted_messages_total",
		Help: "Number of messages deleted from the interruption queue.",
	})
	MessageQueueDuration = metrics.NewHistogram(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: "interruption", Name: "message_queue_duration_seconds",
		Help:    "Time from a message entering the interruption queue to its deletion.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 10),
	})
)
