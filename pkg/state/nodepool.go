package state

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceNodes is the resource name under which NodePool usage (and
// NodePool limits) count nodes.
const ResourceNodes corev1.ResourceName = "nodes"

// NodePoolUsage returns, per NodePool, the summed capacity of its nodes and
// in-flight NodeClaims (see StateNode.Capacity) plus their count under
// ResourceNodes. Nodes being deleted still count: their capacity is in use
// until they are gone.
func (c *Cluster) NodePoolUsage() map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.entries {
		// A view without pods; Capacity copies what it returns.
		n := &StateNode{Node: e.node, NodeClaim: e.nodeClaim}
		pool := n.NodePool()
		if pool == "" {
			continue
		}
		use := out[pool]
		if use == nil {
			use = corev1.ResourceList{ResourceNodes: resource.MustParse("0")}
			out[pool] = use
		}
		for name, q := range n.Capacity() {
			sum := use[name]
			sum.Add(q)
			use[name] = sum
		}
		count := use[ResourceNodes]
		count.Add(resource.MustParse("1"))
		use[ResourceNodes] = count
	}
	return out
}
