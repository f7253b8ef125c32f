package state

// MarkForDeletion marks the nodes with these provider IDs as about to be
// deleted: they take no new pods in simulations. Deleting Nodes and
// NodeClaims are marked without calling this.
func (c *Cluster) MarkForDeletion(providerIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range providerIDs {
		c.marked[id] = true
	}
	c.changedLocked()
}

// UnmarkForDeletion undoes MarkForDeletion (e.g. a disruption was
// abandoned).
func (c *Cluster) UnmarkForDeletion(providerIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range providerIDs {
		delete(c.marked, id)
	}
	c.changedLocked()
}

// goingAwayLocked reports whether the entry at key is marked for deletion
// by a consumer, or its Node or NodeClaim is being deleted: a StateNode's
// MarkedForDeletion, and what ends a nomination's hold (Nominations.Holds).
func (c *Cluster) goingAwayLocked(key string, e *entry) bool {
	return c.marked[key] ||
		(e.node != nil && e.node.DeletionTimestamp != nil) ||
		(e.nodeClaim != nil && e.nodeClaim.DeletionTimestamp != nil)
}
