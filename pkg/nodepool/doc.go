// Package nodepool turns karpenter.sh/v1 NodePool objects (pkg/apis/v1)
// into the solver's view of them (scheduling.NodePool): FromNodePool adapts
// a decoded object, Validate checks the fields the solver relies on (and
// the API's runtime validation), and Decode does both from JSON, naming the
// offending field when one is wrong.
//
// It is the one adapter from the API shape to the solver shape: `joiner
// simulate`, the scenario loader and the provisioner all go through it, so a
// NodePool means the same thing everywhere. It never talks to an API server
// and never decides scheduling; it only translates and validates.
package nodepool
