// Package v1 holds the karpenter.k8s.aws/v1 API: the EC2NodeClass, which
// tells joiner how to launch EC2 instances (AMIs, subnets, security groups,
// instance profile, user data, block devices, network interfaces, kubelet
// settings).
//
// The package is API-compatible with Karpenter's AWS provider: a manifest
// written for Karpenter's EC2NodeClass is accepted unchanged. Static
// validation lives in the CRD (OpenAPI schema plus CEL rules written as
// kubebuilder markers beside each field); checks that need the cloud or the
// cluster (does the role exist, does the user data fit) are the nodeclass
// controller's job and surface as status conditions. EC2NodeClass.Validate
// holds the few static rules CEL cannot express (kubelet fields the schema
// does not declare) for that controller to report.
//
// The package decides names, shapes, defaults and the pure helpers over them
// (AMI family resolution from aliases, tag-key restrictions). It never talks
// to AWS or to an API server.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
