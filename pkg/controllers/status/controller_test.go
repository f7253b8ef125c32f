package status

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// TestStatusMetricsFollowAnObject reconciles one NodeClaim through its
// life: conditions appear, one flips, the claim is deleted and goes. At
// each step it checks operatorpkg's metrics: the current conditions only,
// how long they have held, the transitions seen and their durations, and
// the termination gauges and histogram.
func TestStatusMetricsFollowAnObject(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "status-test", Finalizers: []string{"test/keep"}}}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(nc).WithStatusSubresource(nc).Build()
	m := metrics.NodeClaimStatus
	c, err := NewController(Options{Client: kube, Clock: clk, Metrics: m, Object: func() client.Object { return &v1.NodeClaim{} }})
	if err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: nc.Name}}
	setConditions := func(conds ...metav1.Condition) {
		t.Helper()
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		got.Status.Conditions = conds
		if err := kube.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
	}
	reconcileOnce := func() {
		t.Helper()
		res, err := c.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("requeue after %s: the gauges are computed when scraped, nothing needs a requeue", res.RequeueAfter)
		}
	}
	condition := func(typ string, status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
	}
	launchedTrue := m.ConditionTransitions.WithLabelValues("Launched", "True", "Launched")
	before := testutil.ToFloat64(launchedTrue)

	setConditions(condition("Launched", metav1.ConditionUnknown, "AwaitingReconciliation", t0), condition("Ready", metav1.ConditionUnknown, "AwaitingReconciliation", t0))
	clk.Step(30 * time.Second)
	reconcileOnce()
	if got := gauge(t, m.Objects, "current_status_seconds", "", nc.Name, "Launched", "Unknown", "AwaitingReconciliation"); got != 30 {
		t.Errorf("Launched=Unknown current status seconds = %v, want 30", got)
	}
	clk.Step(5 * time.Second) // no reconcile: a scrape still sees the time go on
	if got := gauge(t, m.Objects, "current_status_seconds", "", nc.Name, "Launched", "Unknown", "AwaitingReconciliation"); got != 35 {
		t.Errorf("Launched=Unknown current status seconds 5 s later = %v, want 35", got)
	}
	clk.Step(-5 * time.Second)

	setConditions(condition("Launched", metav1.ConditionTrue, "Launched", t0.Add(40*time.Second)), condition("Ready", metav1.ConditionUnknown, "AwaitingReconciliation", t0))
	clk.Step(20 * time.Second)
	reconcileOnce()
	if got := testutil.ToFloat64(launchedTrue) - before; got != 1 {
		t.Errorf("Launched→True transitions grew by %v, want 1", got)
	}
	if n := seriesOf(t, m.Objects, "status_condition_count", nc.Name); n != 2 {
		t.Errorf("%d condition count series for the claim, want 2 (the old Launched=Unknown one gone)", n)
	}
	if got := gauge(t, m.Objects, "status_condition_count", "", nc.Name, "Launched", "True", "Launched"); got != 1 {
		t.Errorf("Launched=True count = %v, want 1", got)
	}
	if h := histogram(t, m.ConditionTransitionSeconds.WithLabelValues("Launched", "Unknown", "True")); h.GetSampleCount() == 0 || h.GetSampleSum() < 40 {
		t.Errorf("Launched Unknown→True transition seconds: %d samples, sum %v; want one of 40", h.GetSampleCount(), h.GetSampleSum())
	}
	reconcileOnce() // nothing changed: no new transition
	if got := testutil.ToFloat64(launchedTrue) - before; got != 1 {
		t.Errorf("a reconcile without change counted a transition (%v)", got)
	}

	if err := kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	deleting := &v1.NodeClaim{}
	if err := kube.Get(ctx, req.NamespacedName, deleting); err != nil || deleting.DeletionTimestamp == nil {
		t.Fatalf("the claim is not deleting: %v", err)
	}
	// The client stamps the deletion with the real time.
	clk.SetTime(deleting.DeletionTimestamp.Add(5 * time.Second))
	reconcileOnce()
	if got := gauge(t, m.Objects, "termination_current_time_seconds", "", nc.Name); got != 5 {
		t.Errorf("termination current time = %v, want 5", got)
	}
	terminations := histogram(t, m.TerminationDuration).GetSampleCount()
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = nil
	if err := kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	clk.Step(7 * time.Second)
	sum := histogram(t, m.TerminationDuration).GetSampleSum()
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if h := histogram(t, m.TerminationDuration); h.GetSampleCount() != terminations+1 || h.GetSampleSum()-sum != 12 {
		t.Errorf("termination durations: %d observed adding %v s, want %d adding 12 s", h.GetSampleCount(), h.GetSampleSum()-sum, terminations+1)
	}
	if n := seriesOf(t, m.Objects, "", nc.Name); n != 0 {
		t.Errorf("%d series left for the gone claim", n)
	}
}

// collected is every series c publishes now: its metric name (the
// part after "<kind>_"), label values and value.
type collected struct {
	name   string
	labels []string
	value  float64
}

func collect(t *testing.T, c prometheus.Collector) []collected {
	t.Helper()
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	var out []collected
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		s := collected{name: m.Desc().String(), value: d.GetGauge().GetValue()}
		for _, l := range d.GetLabel() {
			s.labels = append(s.labels, l.GetValue())
		}
		out = append(out, s)
	}
	return out
}

// gauge is the value of c's series named ...suffix with these label values
// (in the labels' sorted order: name, namespace, reason, status, type for
// a condition; name, namespace for a termination); it fails t without one.
func gauge(t *testing.T, c prometheus.Collector, suffix, namespace, name string, condition ...string) float64 {
	t.Helper()
	for _, s := range collect(t, c) {
		if !strings.Contains(s.name, suffix+`"`) || !slices.Contains(s.labels, name) || !slices.Contains(s.labels, namespace) {
			continue
		}
		if all := func() bool {
			for _, v := range condition {
				if !slices.Contains(s.labels, v) {
					return false
				}
			}
			return true
		}(); all && len(s.labels) == 2+len(condition) {
			return s.value
		}
	}
	t.Fatalf("no %s series for %s/%s %v", suffix, namespace, name, condition)
	return 0
}

// seriesOf counts c's series named ...suffix of the named object.
func seriesOf(t *testing.T, c prometheus.Collector, suffix, name string) int {
	t.Helper()
	n := 0
	for _, s := range collect(t, c) {
		if strings.Contains(s.name, suffix+`"`) && slices.Contains(s.labels, name) {
			n++
		}
	}
	return n
}

func histogram(t *testing.T, o prometheus.Observer) *dto.Histogram {
	t.Helper()
	var d dto.Metric
	if err := o.(prometheus.Metric).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram()
}
