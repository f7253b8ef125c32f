package state

import (
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestConcurrentWritersAndReaders exercises the lock discipline under the
// race detector: reconcilers write while consumers read and mutate copies.
func TestConcurrentWritersAndReaders(t *testing.T) {
	c, _, _ := newTestCluster(t)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				name := fmt.Sprintf("n-%d-%d", w, i%10)
				id := "sim:///z/" + name
				c.UpdateNodeClaim(launched(nodeClaim(name, "default", id), "2", "4Gi"))
				c.UpdateNode(node(name, id, map[string]string{"w": "x"}))
				c.UpdatePod(pod("ns", fmt.Sprintf("p-%d-%d", w, i), name, "100m"))
				c.Nominations().Nominate(pod("ns", fmt.Sprintf("q-%d-%d", w, i), "", "100m"), name)
				if i%3 == 0 {
					c.DeletePod(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("p-%d-%d", w, i-1)})
					c.DeleteNode(name)
				}
			}
		}(w)
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				for _, sn := range c.Nodes() {
					if sn.Node != nil {
						sn.Node.Labels["w"] = "mutated"
					}
					_ = sn.ExistingNode()
				}
				_ = c.NodePoolUsage()
			}
		}()
	}
	wg.Wait()
	for _, sn := range c.Nodes() {
		if sn.Node != nil && sn.Node.Labels["w"] != "x" {
			t.Fatalf("a reader's mutation reached the model")
		}
	}
}
