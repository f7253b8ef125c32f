// Package crdtest checks the karpenter.sh/v1 CRDs against a real
// kube-apiserver: objects the schema and CEL rules must reject (with the
// message users will read), the defaults the apiserver applies, the
// transition rules, and the example manifests under examples/nodepools.
//
// It holds only tests; they need the control-plane binaries (make
// controlplane).
package crdtest
