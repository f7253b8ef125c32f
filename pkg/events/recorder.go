package events

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// DefaultDedupeTimeout is how long an identical event (same object, type,
// reason and message) is suppressed after it was published.
const DefaultDedupeTimeout = 2 * time.Minute

// The event rate limit, per event type (Normal, Warning): a burst of
// EventBurst, then EventQPS a second, so that a burst of thousands of pods
// does not spend joiner's API budget (KUBE_CLIENT_QPS) on events. Beyond
// the limit an event is dropped and counted in joiner_events_dropped_total;
// Warnings have their own bucket, so a flood of Normal events never crowds
// out a Warning. The Writer behind bounds what is queued and in flight.
const (
	EventQPS   = 50
	EventBurst = 1000
)

// maxNoteLength is the events.k8s.io/v1 limit on an event's note.
const maxNoteLength = 1024

// Event is one Kubernetes event about Regarding.
type Event struct {
	// Regarding is the object the event is about (Pod, Node, NodeClaim, ...).
	Regarding runtime.Object
	// Related is an optional second object (e.g. the NodeClaim a pod was
	// nominated to).
	Related runtime.Object
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is one of this package's reasons.
	Reason string
	// Action is what the controller did or failed to do (events.k8s.io/v1
	// requires one), e.g. "Launch", "Register", "Delete".
	Action string
	// Message is the human explanation: what happened, why, what to check.
	Message string
	// DedupeTimeout overrides DefaultDedupeTimeout when positive.
	DedupeTimeout time.Duration
}

// Normal and Warning build events of the two types.
func Normal(regarding runtime.Object, reason, action, format string, args ...any) Event {
	return Event{Regarding: regarding, Type: corev1.EventTypeNormal, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)}
}

// Warning builds a Warning event.
func Warning(regarding runtime.Object, reason, action, format string, args ...any) Event {
	return Event{Regarding: regarding, Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: fmt.Sprintf(format, args...)}
}

// Recorder publishes events.
type Recorder interface {
	Publish(events ...Event)
}

// NewRecorder returns a Recorder that writes through r (a Writer; see
// ForManager) and suppresses repeats of an identical event
// within its dedupe timeout.
func NewRecorder(r kevents.EventRecorder, clk clock.PassiveClock) Recorder {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &recorder{sink: r, clock: clk, seen: map[string]time.Time{}, limits: map[string]flowcontrol.PassiveRateLimiter{
		corev1.EventTypeNormal:  flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(EventQPS, EventBurst, clk),
		corev1.EventTypeWarning: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(EventQPS, EventBurst, clk),
	}}
}

// recorder guards seen with mu; the sink is called outside the lock.
type recorder struct {
	sink  kevents.EventRecorder
	clock clock.PassiveClock

	mu   sync.Mutex
	seen map[string]time.Time // dedupe key -> when the suppression ends
	// limits are the token buckets per event type (see EventQPS).
	limits map[string]flowcontrol.PassiveRateLimiter
}

func (r *recorder) Publish(evts ...Event) {
	for _, e := range evts {
		if !r.admit(e) {
			continue
		}
		msg := e.Message
		if len(msg) > maxNoteLength {
			msg = msg[:maxNoteLength-3] + "..."
		}
		r.sink.Eventf(e.Regarding, e.Related, e.Type, e.Reason, e.Action, "%s", msg)
	}
}

// admit reports whether e has not been published within its dedupe
// timeout and its type's rate limit allows it, and records it.
func (r *recorder) admit(e Event) bool {
	key := e.Type + "/" + e.Reason + "/" + e.Message
	if o, err := meta.Accessor(e.Regarding); err == nil {
		key = string(o.GetUID()) + "/" + o.GetNamespace() + "/" + o.GetName() + "/" + key
	}
	timeout := e.DedupeTimeout
	if timeout <= 0 {
		timeout = DefaultDedupeTimeout
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.seen[key]; ok && now.Before(until) {
		return false
	}
	if limit, ok := r.limits[e.Type]; ok && !limit.TryAccept() {
		// Not remembered as seen: the next identical event may go out.
		metrics.EventsDropped.WithLabelValues(e.Type, e.Reason).Inc()
		return false
	}
	if len(r.seen) > 10000 {
		for k, until := range r.seen {
			if !now.Before(until) {
				delete(r.seen, k)
			}
		}
	}
	r.seen[key] = now.Add(timeout)
	return true
}

// Buffer is a Recorder that keeps events in memory, for tests.
type Buffer struct {
	mu     sync.Mutex
	events []Event
}

// Publish appends the events.
func (b *Buffer) Publish(evts ...Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, evts...)
}

// Events returns a copy of what was published so far.
func (b *Buffer) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.events...)
}

// Reasons returns the reasons published so far, in order.
func (b *Buffer) Reasons() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.events))
	for _, e := range b.events {
		out = append(out, e.Reason)
	}
	return out
}
