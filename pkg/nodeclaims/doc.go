// Package nodeclaims creates the NodeClaims a plan asks for: NewNodeClaim
// builds the object from the NodePool's template and the solver's planned
// node, names are deterministic (a hash of the pods they carry, the
// NodePool's launch failure count and an attempt number; a disruption
// replacement's, of the NodeClaims it replaces and its pods), and a Creator
// creates them in parallel, treats an existing claim of the same intent as
// its own, never takes a name the cluster state saw retired, records each
// in the cluster state before the informer delivers it, and counts
// karpenter_nodeclaims_created_total.
//
// Provisioning passes and disruption commands (their replacements) both
// create through it, so a replacement is exactly what provisioning would
// have launched. The package never plans and never launches instances (the
// NodeClaim lifecycle does).
package nodeclaims
