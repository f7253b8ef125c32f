package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/disruption"
)

func TestLoadCluster(t *testing.T) {
	c, err := LoadCluster(sharedScenario(t, "diverse-1000"), filepath.Join(filepath.Dir(sharedScenario(t, "diverse-1000")), "consolidation", "diverse-1000.half.cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 200 || len(c.Pods()) != 500 {
		t.Errorf("%d nodes, %d pods; want 200 and 500", len(c.Nodes), len(c.Pods()))
	}
	if cost := c.Cost(); cost < 343.70 || cost > 343.72 {
		t.Errorf("cost %.4f $/h, want the anchor's 343.71", cost)
	}
	in := c.Input(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), disruption.Options{})
	if len(in.Nodes) != 200 || len(in.Cluster.Nodes) != 200 || in.NodePools["default"].Spec.Disruption.Budgets[0].Nodes != "10%" {
		t.Errorf("input: %d nodes, %d snapshot nodes, pool %+v", len(in.Nodes), len(in.Cluster.Nodes), in.NodePools["default"].Spec.Disruption)
	}
	for _, n := range in.Cluster.Nodes {
		for _, p := range n.Pods {
			if p.Spec.NodeName != n.Name {
				t.Fatalf("pod %s/%s on %s says nodeName %q", p.Namespace, p.Name, n.Name, p.Spec.NodeName)
			}
		}
	}
}

func TestLoadClusterErrors(t *testing.T) {
	dir := t.TempDir()
	scen := sharedScenario(t, "diverse-100")
	for _, tc := range []struct {
		name, cluster, want string
	}{
		{name: "unknown type", cluster: `{"scenario":"diverse-100","nodes":[{"name":"n","instanceType":"nope","zone":"z","capacityType":"on-demand","price":1,"pods":[]}],"deletedPods":[]}`, want: `nodes[0] "n": instanceType: "nope" is not in the scenario's catalog`},
		{name: "unknown pod", cluster: `{"scenario":"diverse-100","nodes":[{"name":"n","instanceType":"fake-it-0","zone":"z","capacityType":"on-demand","price":1,"pods":["ghost"]}],"deletedPods":[]}`, want: `pods: "ghost" is not in the scenario`},
		{name: "pods left out", cluster: `{"scenario":"diverse-100","nodes":[],"deletedPods":[]}`, want: "is neither deleted nor bound to a node"},
		{name: "another scenario", cluster: `{"scenario":"diverse-5000","nodes":[],"deletedPods":[]}`, want: `made from "diverse-5000", not "diverse-100"`},
		{name: "unknown field", cluster: `{"scenario":"diverse-100","extra":1}`, want: `unknown field "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.json")
			if err := os.WriteFile(path, []byte(tc.cluster), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCluster(scen, path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
