// Package scheduling is joiner's pure scheduling solver: an immutable
// Snapshot of the cluster (NodePools, their instance types and offerings,
// existing nodes and in-flight NodeClaims with their pods, DaemonSets,
// pending pods, volumes and the time) goes in, and a Plan comes out: pods
// placed on existing capacity, new NodeClaims with their narrowed
// requirements and price-ordered instance-type options, and for every pod
// that fits nowhere one grouped reason per NodePool.
//
// The package never talks to an API server, a controller or a cloud: the
// provisioner, consolidation and `joiner simulate` each build a Snapshot
// through their own thin adapter and call Solve. That keeps the solver
// deterministic (the same Snapshot gives the same Plan, byte for byte) and
// lets it be tested against a brute-force oracle and benchmarked in
// isolation.
package scheduling
