// Package crdtest checks the sim.joiner.dev/v1alpha1 SimNodeClass CRD
// against a real kube-apiserver: objects the schema and CEL rules must
// reject (with the message users will read), the defaults the API server
// stores (and that SimNodeClass.ApplyDefaults mirrors), and the example
// manifests under examples/nodeclasses.
//
// It holds only tests; they need the control-plane binaries (make
// controlplane).
package crdtest
