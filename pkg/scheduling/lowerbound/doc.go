// Package lowerbound measures how good a plan is: Compute gives the linear
// programming lower bound on what the new nodes for a Snapshot's pending
// pods must cost, and PlanCost prices a Plan the same way the shared
// scenarios' README does, so the two can be compared (cost / LP).
//
// The LP relaxes bin packing to fractional nodes: minimise Σ price·x over
// instance types (each at its cheapest available offering the NodePool
// allows), subject to the types' allocatable cpu, memory, pods and any other
// requested resource covering the pods' total requests, x ≥ 0. "LP+anti"
// adds Σx ≥ the number of pods that must sit on pairwise distinct nodes
// (required hostname anti-affinity). Both ignore every other constraint, so
// no plan can beat them; they are yardsticks for benchmarks and `joiner
// simulate`, never inputs to the solver.
package lowerbound
