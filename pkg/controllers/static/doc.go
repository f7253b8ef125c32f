// Package static keeps a static NodePool (spec.replicas, Karpenter's
// StaticCapacity feature gate) at its node count: it creates NodeClaims
// from the NodePool's template until the NodePool's active NodeClaims
// (those being replaced by drift included) number replicas, within
// limits.nodes, and deletes the surplus when replicas go down, in
// Karpenter's order (unlaunched NodeClaims, then empty nodes, then the
// lowest disruption cost; see disruption.ScaleDownOrder). Node budgets do
// not hold back a scale-down; PDBs do, in the drain that follows.
//
// It never plans pods: the provisioner leaves static NodePools out of its
// plans, consolidation never takes their nodes, and drifted nodes are
// replaced by the disruption engine's static drift method. With the gate
// off it only tells the NodePool, with an event, that the gate is needed.
package static
