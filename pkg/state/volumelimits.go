package state

import "maps"

// UpdateVolumeLimits records a node's CSI attach limits (driver → volumes),
// as its CSINode reports them; nil forgets them.
func (c *Cluster) UpdateVolumeLimits(nodeName string, limits map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limits == nil {
		delete(c.volumeLimits, nodeName)
	} else {
		c.volumeLimits[nodeName] = maps.Clone(limits)
	}
	c.changedLocked()
}
