package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// EventsDropped counts events joiner decided not to send because more were
// published than the API server is sent per second (joiner's own; the
// events package says why a limit is needed).
var EventsDropped = NewCounterVec(prometheus.CounterOpts{
	Namespace: JoinerNamespace, Subsystem: "events", Name: "dropped_total",
	Help: "Number of events not sent, by type and reason: beyond joiner's event rate limit, beyond the event writer's queue, or refused by the API server.",
}, "type", LabelReason)
