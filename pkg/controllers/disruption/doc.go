// Package disruption is the controller half of voluntary disruption: it
// builds the engine's Input (pkg/disruption) from the cluster state, the
// provisioner's own snapshot, the NodePools and the PodDisruptionBudgets,
// asks disruption.Decide for a command, and carries the command out the
// way Karpenter v1 does:
//
//	decide ──► (emptiness, consolidation) wait 15 s, rebuild, Validate
//	       ──► taint candidates karpenter.sh/disrupted:NoSchedule,
//	           NodeClaims get DisruptionReason, state marks them
//	       ──► create replacements (the provisioner's NewNodeClaim path)
//	       ──► queue: wait until every replacement is Initialized
//	       ──► delete candidate NodeClaims (termination drains with PDBs)
//	           or, on failure/timeout, un-taint and say why (rollback)
//
// It decides nothing about which nodes go: that is pkg/disruption, which
// is pure. It never deletes a NodeClaim that was not a candidate of a
// validated command, and it never deletes an instance directly: the
// existing termination path does, after draining.
//
// Safe drift: when the replacements of a drift command fail to initialise,
// drift stops for that NodePool (the DriftHalted condition and an event)
// until the NodePool changes or DriftHaltDuration passes, instead of
// replacing the next drifted node with another broken one. Only a
// replacement that ran and was lost before it initialised counts: one the
// cloud had no capacity for, or one lost after it initialised, rolls the
// command back and drift tries again. While its command is in flight a
// replacement is held as a nominated node is, so no other command takes
// it while it is still empty (chaos aws 3090, test/chaos/README.md).
package disruption
