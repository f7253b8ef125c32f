package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestInsufficientCapacityFallsBack takes away spot capacity everywhere and
// every offering in one zone: the pods still run, on on-demand nodes in the
// other zones.
func TestInsufficientCapacityFallsBack(t *testing.T) {
	s := newScenario(t)
	s.nodeClass.Spec.Faults = &simv1alpha1.Faults{InsufficientCapacity: []simv1alpha1.InsufficientCapacityFault{
		{CapacityType: v1.CapacityTypeSpot},
		{Zone: "sim-east-1a"},
	}}
	s.apply()
	s.joiner()
	s.deployment("ice", 12, "1", "1Gi", nil)
	s.waitRunning("ice", 12, 90*time.Second)

	nodes, err := s.nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]int{}
	for _, n := range nodes {
		ct, zone := n.Labels[v1.LabelCapacityType], n.Labels[v1.LabelTopologyZone]
		shapes[fmt.Sprintf("%s %s in %s", n.Labels[v1.LabelInstanceType], ct, zone)]++
		if ct == v1.CapacityTypeSpot || zone == "sim-east-1a" {
			t.Errorf("node %s launched on an offering without capacity (%s in %s)", n.Name, ct, zone)
		}
	}
	t.Logf("nodes: %v", shapes)
	if len(nodes) == 0 {
		t.Fatal("no node")
	}
}
