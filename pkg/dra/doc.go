// Package dra is joiner's reading of Dynamic Resource Allocation
// (resource.k8s.io/v1): which devices a node of an instance type publishes
// (the simulated cloud's device driver publishes exactly these in its
// ResourceSlices), and what a pod's ResourceClaims ask of a node, as the
// scheduling.Devices view the pure solver plans with.
//
// Device selectors are CEL expressions; they are evaluated with
// Kubernetes' own library (k8s.io/dynamic-resource-allocation/cel), the one
// kube-scheduler's DRA plugin uses, so a device joiner counts as matching
// is one the scheduler can allocate. The package only reads: it never
// writes claims or slices and never allocates (kube-scheduler does).
package dra
