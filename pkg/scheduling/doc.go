// Package scheduling is joiner's pure scheduling solver: an immutable
// Snapshot of the cluster (NodePools, their instance types and offerings,
// existing nodes and in-flight NodeClaims with their pods, DaemonSets,
// pending pods, volumes and the time) goes in, and a Plan comes out: pods
// placed on existing capacity, new NodeClaims with their narrowed
// requirements and price-ordered instance-type options, and for every pod
// that fits nowhere one typed Reason per NodePool (and one for the existing
// nodes), produced where the predicate rejects and rendered to text only
// by Message.
//
// What it decides: which pods go where, which instance types a new node may
// launch as (cheapest first), its zone and capacity type when the pods'
// topology needs them, and why a pod cannot be placed. What it never does:
// talk to an API server, a controller or a cloud, or mutate its input. The
// provisioner, consolidation and `joiner simulate` each build a Snapshot
// through their own thin adapter and call Solve. That keeps the solver
// deterministic (the same Snapshot gives the same Plan, byte for byte) and
// lets it be tested against a brute-force oracle and benchmarked in
// isolation.
//
// Identical pods are grouped into classes and checked once; nodes are
// packed first fit in tiers (most constrained pods first), a node grows to
// a bigger instance type only while that is no dearer than a node of its
// own, and each node's type is chosen after packing. See README.md for the
// pipeline.
package scheduling
