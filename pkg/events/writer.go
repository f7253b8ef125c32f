package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	kevents "k8s.io/client-go/tools/events"
	eventutil "k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Writer's bounds. QueueSize is client-go's own queue length for a
// broadcaster (maxQueuedEvents); Workers bound the writes in flight; an
// event whose write failed for a reason that may pass (the API server
// overloaded, unreachable, or timing out) is tried up to WriteTries times.
const (
	QueueSize    = 1000
	Workers      = 8
	WriteTries   = 3
	writeTimeout = 10 * time.Second
	retryBackoff = time.Second
)

// Writer writes events.k8s.io/v1 Events to the API server from a bounded
// queue, with a fixed number of workers, and drops (and counts, in
// joiner_events_dropped_total) what does not fit.
//
// It stands in for client-go's events.k8s.io broadcaster, which a burst
// made the bulk of joiner's memory: the broadcaster starts a goroutine per
// event, keeps every event six minutes for its series, and holds the lock
// each of those goroutines needs while it PATCHes the series it closes, one
// by one. In a 10,000-pod load run 11,635 goroutines waited behind one
// such PATCH to a loaded API server. client-go's core/v1 recorder (the
// one Karpenter uses) is bounded, but it cannot set events.k8s.io's
// action and related object, which `joiner explain` and the tests read.
// Repeats need no series here: the Recorder in front suppresses an
// identical event within its dedupe timeout.
type Writer struct {
	client     typedeventsv1.EventsV1Interface
	scheme     *runtime.Scheme
	clock      clock.PassiveClock
	controller string
	instance   string
	queue      chan *eventsv1.Event

	once sync.Once
}

var _ kevents.EventRecorder = (*Writer)(nil)

// NewWriter returns a Writer for cfg's cluster, reporting as controller
// (events.k8s.io's reportingController). It writes nothing until Start.
func NewWriter(cfg *rest.Config, scheme *runtime.Scheme, controller string) (*Writer, error) {
	c, err := typedeventsv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	return NewWriterForClient(c, scheme, controller), nil
}

// NewWriterForClient is NewWriter with its client given.
func NewWriterForClient(c typedeventsv1.EventsV1Interface, scheme *runtime.Scheme, controller string) *Writer {
	host, _ := os.Hostname()
	instance := controller + "-" + host
	if len(instance) > 128 { // the API's limit on reportingInstance
		instance = instance[:128]
	}
	return &Writer{
		client: c, scheme: scheme, clock: clock.RealClock{},
		controller: controller, instance: instance,
		queue: make(chan *eventsv1.Event, QueueSize),
	}
}

// Eventf queues an event about regarding (and related, which may be nil).
// It never blocks: when the queue is full the event is dropped.
func (w *Writer) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ev, err := w.event(regarding, related, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		log.Log.WithName("events").Error(err, "cannot build event", logging.Reason, reason)
		return
	}
	select {
	case w.queue <- ev:
	default:
		metrics.EventsDropped.WithLabelValues(eventtype, reason).Inc()
	}
}

// event builds the Event as client-go's recorder does: named after the
// object and the time, in the object's namespace (default for
// cluster-scoped objects).
func (w *Writer) event(regarding, related runtime.Object, eventtype, reason, action, note string) (*eventsv1.Event, error) {
	ref, err := reference.GetReference(w.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("reference to the regarding object: %w", err)
	}
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q: want %s or %s", eventtype, corev1.EventTypeNormal, corev1.EventTypeWarning)
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		// As client-go's recorder: the event goes without the related
		// object rather than not at all.
		if relatedRef, err = reference.GetReference(w.scheme, related); err != nil {
			log.Log.WithName("events").Error(err, "cannot reference the related object; writing the event without it", logging.Reason, reason)
		}
	}
	now := w.clock.Now()
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventutil.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: w.controller,
		ReportingInstance:   w.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                note,
		Type:                eventtype,
	}, nil
}

// Start runs the workers until ctx ends; the events still queued then
// are dropped.
func (w *Writer) Start(ctx context.Context) error {
	started := false
	w.once.Do(func() { started = true })
	if !started {
		return errors.New("event writer already started")
	}
	logger := log.FromContext(ctx).WithName("events")
	var wg sync.WaitGroup
	for range Workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-w.queue:
					if err := w.write(ctx, ev); err != nil && ctx.Err() == nil {
						metrics.EventsDropped.WithLabelValues(ev.Type, ev.Reason).Inc()
						logger.V(1).Info("event not written", logging.Reason, ev.Reason, logging.Regarding, ev.Regarding.Name, logging.Error, err.Error())
					}
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is false: every replica writes the events its own
// controllers publish (only the leader's controllers run).
func (w *Writer) NeedLeaderElection() bool { return false }

// write creates ev, trying again after a pause when the failure may pass.
func (w *Writer) write(ctx context.Context, ev *eventsv1.Event) error {
	var err error
	for try := range WriteTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait.Jitter(retryBackoff<<(try-1), 0.25)):
			}
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		_, err = w.client.Events(ev.Namespace).Create(wctx, ev, metav1.CreateOptions{})
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if !transient(err) {
			return err
		}
	}
	return err
}

// transient reports whether a failed write may succeed when tried again:
// the API server was overloaded, timed out or could not be reached. A
// rejected event (invalid, forbidden, its namespace gone) is not retried.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // no answer from the API server
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// ForManager builds a Writer for mgr's cluster, adds it to mgr, and
// returns a Recorder over it: what a process that runs its controllers in
// one manager needs, once.
func ForManager(mgr manager.Manager, clk clock.PassiveClock) (Recorder, error) {
	w, err := NewWriter(mgr.GetConfig(), mgr.GetScheme(), "joiner")
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(w); err != nil {
		return nil, fmt.Errorf("adding the event writer: %w", err)
	}
	return NewRecorder(w, clk), nil
}
