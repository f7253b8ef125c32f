// Package podevents keeps a NodeClaim's status.lastPodEventTime: the last
// time a workload pod was bound to its Node, went terminal or started
// terminating there. Consolidation measures a node's quiet time
// (consolidateAfter) from it, so a node that keeps receiving or losing
// pods is not replaced under them.
//
// DaemonSet and mirror pods do not count: they come and go with the node
// itself. Nor do pods bound before the NodeClaim was initialised: the
// quiet time starts at initialisation anyway, and a new node's first pods
// would otherwise cost it a status write that races the lifecycle
// controller's own. Updates closer together than DedupeWindow are folded into one,
// as Karpenter does, so a Deployment rolling a hundred pods onto a node
// costs one status write, not a hundred.
//
// It decides nothing about disruption; the Consolidatable condition
// (package consolidation) reads what it writes.
package podevents
