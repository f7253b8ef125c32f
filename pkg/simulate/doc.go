// Package simulate runs the solver on a Snapshot and renders the plan for
// people (text) and for machines (JSON): new nodes grouped by NodePool and
// instance type with their pods and prices, placements on existing nodes,
// and the unschedulable pods grouped by identical reasons, each group
// printed once.
//
// It decides nothing about scheduling: the plan comes from the solver
// unchanged, and prices are counted as lowerbound.PlanCost counts them. It
// is the rendering half of `joiner simulate`; reading input lives in
// pkg/scenario.
package simulate
