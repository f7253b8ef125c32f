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
//
// Configurations is the tighter bound (Gilmore–Gomory column generation):
// a program over whole nodes, each an offering (instance type, zone,
// capacity type) and the integer count of each pod class it holds, so it
// sees what the resource LP cannot: capacity a node's pods cannot fill
// for their sizes, one member of each hostname anti-affinity group per
// node, and pods that may run only on some offerings. The master is solved
// by a warm-started primal simplex (exact duals at its optimum); pricing
// is a bounded multi-dimensional knapsack per offering (branch and bound
// under a surrogate relaxation), bounded without search by integer tables
// over one dimension and over CPU and memory together (sizes floored, so
// the tables never under-estimate; exact in the sizes' own units). Its
// value is a valid bound at every iteration (Farley: the master's value
// over the largest ratio of a configuration's dual value to its price),
// so a work limit only loosens it.
package lowerbound
