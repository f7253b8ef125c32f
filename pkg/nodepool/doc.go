// Package nodepool turns karpenter.sh/v1 NodePool objects into the solver's
// view of them (scheduling.NodePool), validating the fields the solver relies
// on and naming the offending field when one is wrong.
//
// It is the one adapter from the API shape to the solver shape: `joiner
// simulate`, the scenario loader and the provisioner all go through it, so a
// NodePool means the same thing everywhere. It never talks to an API server
// and never decides scheduling; it only translates and validates.
package nodepool
