package observability

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// TestNodeSeriesFollowTheNodes: the per-node gauges publish each interval
// the nodes of that interval, with their new values, and nothing of a
// node gone.
func TestNodeSeriesFollowTheNodes(t *testing.T) {
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
	// count checks that each per-node gauge has one series per node.
	count := func(step string, want int) {
		t.Helper()
		for _, tc := range []struct {
			name   string
			series *metrics.Series
		}{
			{"allocatable", metrics.NodesAllocatable},
			{"lifetime", metrics.NodesCurrentLifetime},
		} {
			if got := testutil.CollectAndCount(tc.series); got != want {
				t.Errorf("%s: %d series %s, want %d", tc.name, got, step, want)
			}
		}
	}
	c.updateNodes([]*state.StateNode{a, b})
	count("with nodes a and b", 2)
	clk.Step(time.Minute)
	c.updateNodes([]*state.StateNode{a})
	count("after node b went", 1)
	if got, _ := metrics.NodesAllocatable.Value(nodeLabelValues(a.Node, corev1.ResourceCPU)...); got != 4 {
		t.Errorf("node a's allocatable CPU %g, want 4", got)
	}
	if got, _ := metrics.NodesCurrentLifetime.Value("a", "default"); got != 120 {
		t.Errorf("node a's lifetime %g s, want 120", got)
	}
}

// TestCostPricesEachNodeFromItsOwnPool: two NodePools may price the same
// offering differently (a NodeOverlay, a reservation); each node's cost
// comes from its own NodePool's instance types. A price map shared by every
// pool let the last pool listed win.
func TestCostPricesEachNodeFromItsOwnPool(t *testing.T) {
	pools := []v1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "cheap"}}, {ObjectMeta: metav1.ObjectMeta{Name: "dear"}}}
	typed := func(price float64) []*scheduling.InstanceType {
		return []*scheduling.InstanceType{{Name: "m5.large", Offerings: []scheduling.Offering{{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true}}}}
	}
	node := func(name, pool string) *state.StateNode {
		labels := map[string]string{v1.LabelNodePool: pool, corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "zone-a", v1.LabelCapacityType: v1.CapacityTypeOnDemand}
		return &state.StateNode{
			Node:      &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
			NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
		}
	}
	updateCost(pools, []*state.StateNode{node("a", "cheap"), node("b", "dear"), node("c", "dear")},
		map[string][]*scheduling.InstanceType{"cheap": typed(0.1), "dear": typed(0.3)})
	for pool, want := range map[string]float64{"cheap": 0.1, "dear": 0.6} {
		if got := testutil.ToFloat64(metrics.NodePoolsCost.WithLabelValues(pool)); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("cost of nodepool %s = %v, want %v", pool, got, want)
		}
	}
}
