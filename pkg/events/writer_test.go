package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{Scheme: test.Scheme()})
}

// listEvents waits until the namespace holds want events and returns them.
func listEvents(t *testing.T, c client.Client, ns string, want int) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(list.Items) != want {
			return fmt.Errorf("waiting for events: %d of %d", len(list.Items), want)
		}
		return nil
	})
	return list.Items
}

// The events the API server accepts, about a namespaced and a
// cluster-scoped object, carry what `joiner explain` reads: the action,
// the related object, the reporting controller.
func TestWriterWritesEventsTheAPIServerAccepts(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	w, err := events.NewWriter(env.Config, test.Scheme(), "joiner")
	if err != nil {
		t.Fatal(err)
	}
	test.StartRunnable(t, w)
	r := events.NewRecorder(w, nil)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "pod-uid"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node"), UID: "node-uid"}}
	nominated := events.Normal(pod, events.Nominated, "Nominate", "planned for node %s", node.Name)
	nominated.Related = node
	r.Publish(nominated)

	got := listEvents(t, env.Client, ns, 1)[0]
	if got.Regarding.Kind != "Pod" || got.Regarding.Name != "web" || got.Regarding.UID != "pod-uid" {
		t.Errorf("regarding = %+v, want the pod", got.Regarding)
	}
	if got.Related == nil || got.Related.Kind != "Node" || got.Related.Name != node.Name {
		t.Errorf("related = %+v, want the node", got.Related)
	}
	if got.Reason != events.Nominated || got.Action != "Nominate" || got.Type != corev1.EventTypeNormal ||
		got.Note != "planned for node "+node.Name || got.ReportingController != "joiner" || got.ReportingInstance == "" {
		t.Errorf("event = %+v", got)
	}

	// An object whose name leaves no room for the time suffix still gets
	// its event (named by a UUID, as client-go's recorder does).
	long := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 250), Namespace: ns}}
	r.Publish(events.Normal(long, events.Nominated, "Nominate", "long name"))
	listEvents(t, env.Client, ns, 2)

	// A cluster-scoped object's events go to the default namespace.
	r.Publish(events.Warning(node, events.ArchitectureMismatch, "Initialize", "arch arm64 on %s", node.Name))
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == node.Name && e.Reason == events.ArchitectureMismatch && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return errors.New("no event about the node in the default namespace")
	})
}

// A burst beyond the queue is dropped and counted, and never blocks the
// caller; what fit in the queue is written once the writer runs.
func TestWriterDropsWhatDoesNotFitItsQueue(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	// joiner's own client limits (KUBE_CLIENT_QPS), not client-go's
	// default 5/s, which would take minutes over a queue of 1,000.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 200, 300
	w, err := events.NewWriter(cfg, test.Scheme(), "joiner")
	if err != nil {
		t.Fatal(err)
	}
	const reason = "QueueTest"
	dropped := func() float64 {
		return testutil.ToFloat64(metrics.EventsDropped.WithLabelValues(corev1.EventTypeNormal, reason))
	}
	before := dropped()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: ns}}
	start := time.Now()
	for range events.QueueSize + 7 {
		w.Eventf(pod, nil, corev1.EventTypeNormal, reason, "Test", "one of a burst")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("queueing %d events took %s: Eventf must not block", events.QueueSize+7, d)
	}
	if got := dropped() - before; got != 7 {
		t.Errorf("dropped %v events, want the 7 beyond the queue of %d", got, events.QueueSize)
	}
	test.StartRunnable(t, w)
	listEvents(t, env.Client, ns, events.QueueSize)
	if got := dropped() - before; got != 7 {
		t.Errorf("dropped %v events in all, want only the 7 beyond the queue", got)
	}
}

// A write the API server refused because it was overloaded is tried
// again; one it rejected as invalid is not, and is counted as dropped.
func TestWriterRetriesOnlyWhatMayPass(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fail        error
		failures    int32
		wantCreates int32
		wantWritten bool
	}{
		{name: "throttled twice, then written", fail: apierrors.NewTooManyRequests("slow down", 0), failures: 2, wantCreates: 3, wantWritten: true},
		{name: "timed out twice, then written", fail: apierrors.NewServerTimeout(schema.GroupResource{Resource: "events"}, "create", 0), failures: 2, wantCreates: 3, wantWritten: true},
		{name: "unreachable three times", fail: errors.New("connection refused"), failures: 3, wantCreates: events.WriteTries, wantWritten: false},
		{name: "invalid", fail: apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "x", nil), failures: 1, wantCreates: 1, wantWritten: false},
		{name: "namespace gone", fail: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "gone"), failures: 1, wantCreates: 1, wantWritten: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var creates atomic.Int32
			cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
				if creates.Add(1) <= tc.failures {
					return true, nil, tc.fail
				}
				return false, nil, nil
			})
			w := events.NewWriterForClient(cs.EventsV1(), test.Scheme(), "joiner")
			reason := "Retry" + test.Name(t, "")
			before := testutil.ToFloat64(metrics.EventsDropped.WithLabelValues(corev1.EventTypeWarning, reason))
			test.StartRunnable(t, w)
			w.Eventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, corev1.EventTypeWarning, reason, "Test", "note")
			test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
				list, err := cs.EventsV1().Events("ns").List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				dropped := testutil.ToFloat64(metrics.EventsDropped.WithLabelValues(corev1.EventTypeWarning, reason)) - before
				switch {
				case tc.wantWritten && len(list.Items) == 1:
					return nil
				case !tc.wantWritten && dropped == 1:
					return nil
				}
				return errors.New("write not settled yet")
			})
			if got := creates.Load(); got != tc.wantCreates {
				t.Errorf("creates = %d, want %d", got, tc.wantCreates)
			}
		})
	}
}
