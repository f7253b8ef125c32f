// Package disruption decides which managed nodes joiner may voluntarily
// remove or replace, and why the others may not be touched now.
//
// It is the pure half of Karpenter v1's disruption controller: it takes an
// Input (the provisioner's scheduling.Snapshot of the whole cluster, the
// managed nodes with their NodeClaims and pods, the NodePools' disruption
// specs and the PodDisruptionBudgets, all observed at Input.Now) and returns
// a Decision: at most one Command (emptiness, drift, multi-node or
// single-node consolidation, in that order; the first method that yields a
// command wins), a Verdict for every managed node, and the budget left per
// NodePool per reason.
//
// Consolidation decides with the same solver provisioning uses
// (scheduling.Solve, preferences held as requirements), on a copy of the
// snapshot with the candidates removed and their pods pending, so a
// command never relies on capacity the provisioner would not find. A
// command deletes nodes, or replaces N of them by at most N strictly
// cheaper ones (Karpenter: one) saving at least MinSavingsFraction. See
// README.md for the flow and the benchmark.
//
// The package never talks to the API server, never reads a clock and never
// calls a cloud provider: the controller in pkg/controllers/disruption
// builds the Input, waits, calls Validate, taints, launches replacements
// and deletes; `joiner simulate --disruption` prints the same Decision for a
// kubectl dump.
package disruption
