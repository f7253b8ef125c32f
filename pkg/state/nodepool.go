package state

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Usage is each NodePool's capacity in use: the summed capacity of its
// nodes and in-flight NodeClaims plus their count under v1.ResourceNodes.
// It is the one tally behind NodePool limits (the live model's InUse),
// status.resources and the usage metrics; callers differ only in how they
// size a NodeClaim that has not launched yet (see StateNode.Capacity).
type Usage map[string]corev1.ResourceList

// Add counts one node or NodeClaim of pool with capacity; a node without a
// NodePool counts nowhere.
func (u Usage) Add(pool string, capacity corev1.ResourceList) {
	if pool == "" {
		return
	}
	use := u[pool]
	if use == nil {
		use = corev1.ResourceList{v1.ResourceNodes: resource.MustParse("0")}
		u[pool] = use
	}
	for name, q := range capacity {
		sum := use[name]
		sum.Add(q)
		use[name] = sum
	}
	count := use[v1.ResourceNodes]
	count.Add(resource.MustParse("1"))
	use[v1.ResourceNodes] = count
}

// NodePoolUsage returns the Usage of every NodePool, an unlaunched
// NodeClaim sized by its requests (see StateNode.Capacity). Nodes being
// deleted still count: their capacity is in use until they are gone.
func (c *Cluster) NodePoolUsage() Usage {
	out := Usage{}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.entries {
		// A view without pods; Capacity copies what it returns.
		n := &StateNode{Node: e.node, NodeClaim: e.nodeClaim}
		out.Add(n.NodePool(), n.Capacity())
	}
	return out
}
