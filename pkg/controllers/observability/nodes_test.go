package observability

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/state"
)

// TestNodeSeriesKeptAcrossIntervals: the per-node gauges keep a node's
// series from one interval to the next (the same series, with the new
// value), and delete the series of a node gone; they are not Reset and
// re-created each interval.
func TestNodeSeriesKeptAcrossIntervals(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(created.Add(time.Minute))
	c := newController(Options{Clock: clk})
	node := func(name string) *state.StateNode {
		return &state.StateNode{Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}, CreationTimestamp: metav1.NewTime(created)},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		}}
	}
	a, b := node("a"), node("b")
	allocatable := func(n *state.StateNode) prometheus.Gauge {
		g, err := metrics.NodesAllocatable.GetMetricWithLabelValues(nodeLabelValues(n.Node, corev1.ResourceCPU)...)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}

	c.updateNodes([]*state.StateNode{a, b})
	first := allocatable(a)
	clk.Step(time.Minute)
	c.updateNodes([]*state.StateNode{a})
	for _, tc := range []struct {
		name      string
		vec       *prometheus.GaugeVec
		wantCount int
	}{
		{"allocatable", metrics.NodesAllocatable, 1},
		{"lifetime", metrics.NodesCurrentLifetime, 1},
	} {
		if got := testutil.CollectAndCount(tc.vec); got != tc.wantCount {
			t.Errorf("%s: %d series after node b went, want %d", tc.name, got, tc.wantCount)
		}
	}
	if allocatable(a) != first {
		t.Errorf("node a's allocatable series was re-created, not kept")
	}
	if got := testutil.ToFloat64(metrics.NodesCurrentLifetime.WithLabelValues("a", "default")); got != 120 {
		t.Errorf("node a's lifetime %g s, want 120", got)
	}
}
