// Package explain answers "why?" about one object of a cluster, from one
// read snapshot of it: why a pod is still pending (each NodePool and why it
// was rejected, the NodeClaim it waits for against that claim's deadline,
// what would fix it), where a NodeClaim or Node stands in its lifecycle
// (launched, registered, initialised, with the registration checklist and
// the initialisation checks the lifecycle controller acts on) and why it
// is or is not being disrupted (the verdict the disruption controller
// stores on the NodeClaim), and what a NodePool has left (limits,
// disruption budgets allowed now, readiness of it and its node class,
// instance types its requirements keep).
//
// It decides nothing itself: pods are re-solved by pkg/scheduling on the
// snapshot (through pkg/simulate, as `joiner simulate` does), budgets come
// from pkg/disruption, node checks from the lifecycle controller. The
// functions are pure: the snapshot in, a verdict struct out; reading the
// cluster is the caller's job (cmd/joiner's `explain`). The verdict structs
// are the stable machine-readable output (-o json|yaml); Write renders the
// grouped text.
package explain
