// Package consolidation keeps the Consolidatable condition on NodeClaims:
// True once the NodeClaim is initialised and its node has been quiet (no
// workload pod bound, finished or terminating: status.lastPodEventTime)
// for its NodePool's consolidateAfter; cleared while it is not
// initialised, while the node is still inside that window, or when the
// NodePool says consolidateAfter: Never.
//
// It decides only when a node may be looked at; whether it is worth
// removing or replacing is the disruption controller's decision, which
// reads the condition.
package consolidation
