package state

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestReadOnlyNodesMatchNodes: ReadOnlyNodes shows what Nodes shows (pods
// on nodes, pods nominated to each NodeClaim, only live nominations), and
// Nodes' copies stay independent of the model.
func TestReadOnlyNodesMatchNodes(t *testing.T) {
	c, clk, _ := newTestCluster(t)
	c.UpdateNodeClaim(launched(nodeClaim("nc-1", "default", "sim:///a/i-1"), "4", "16Gi"))
	c.UpdateNode(node("node-1", "sim:///a/i-1", map[string]string{"team": "a"}))
	// nc-2 initialised: its nominations follow the plan's window.
	c.UpdateNodeClaim(initialized(nodeClaim("nc-2", "default", "")))
	c.UpdateNodeClaim(nodeClaim("nc-3", "default", ""))
	c.UpdatePod(pod("ns", "bound-b", "node-1", "1"))
	c.UpdatePod(pod("ns", "bound-a", "node-1", "1"))
	c.Nominations().Nominate(pod("ns", "early", "", "1"), "nc-2")
	clk.Step(45 * time.Second)
	c.Nominations().Nominate(pod("ns", "late-b", "", "1"), "nc-2")
	c.Nominations().Nominate(pod("ns", "late-a", "", "1"), "nc-3")
	for _, tc := range []struct {
		name string
		at   time.Duration
		want map[string][]string // node name: nominated pods
	}{
		{"every nomination live", 0, map[string][]string{"nc-2": {"early", "late-b"}, "nc-3": {"late-a"}}},
		{"the first nomination expired", 20 * time.Second, map[string][]string{"nc-2": {"late-b"}, "nc-3": {"late-a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk.Step(tc.at)
			deep, shared := c.Nodes(), c.ReadOnlyNodes()
			if !equality.Semantic.DeepEqual(deep, shared) {
				t.Fatalf("ReadOnlyNodes differs from Nodes")
			}
			for _, sn := range shared {
				var names []string
				for _, p := range sn.NominatedPods {
					names = append(names, p.Name)
				}
				if want := tc.want[sn.Name()]; !equality.Semantic.DeepEqual(names, want) {
					t.Errorf("%s: nominated %v, want %v", sn.Name(), names, want)
				}
				if sn.Name() == "node-1" && (len(sn.Pods) != 2 || sn.Pods[0].Name != "bound-a") {
					t.Errorf("node-1: pods %v, want bound-a and bound-b in order", sn.Pods)
				}
			}
			// Nodes' copies are the caller's: changing them leaves the model.
			for _, sn := range deep {
				for _, p := range append(sn.Pods, sn.NominatedPods...) {
					p.Labels = map[string]string{"mutated": "yes"}
				}
			}
			for _, sn := range c.ReadOnlyNodes() {
				for _, p := range append(sn.Pods, sn.NominatedPods...) {
					if p.Labels["mutated"] != "" {
						t.Errorf("a change to Nodes' copy of %s reached the model", p.Name)
					}
				}
			}
		})
	}
}
