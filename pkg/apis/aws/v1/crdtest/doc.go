// Package crdtest checks the karpenter.k8s.aws/v1 EC2NodeClass CRD against
// a real kube-apiserver: objects the schema and CEL rules must reject (with
// the message users will read), the defaults the API server stores, the
// role/instanceProfile transition rules, and the example manifests under
// examples/nodeclasses.
//
// It holds only tests; they need the control-plane binaries (make
// controlplane).
package crdtest
