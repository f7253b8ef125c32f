// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 CapacityBuffer
// API as Karpenter serves it (the shape is cluster-autoscaler's): spare
// capacity declared as a number of chunks of a pod's shape, which joiner
// plans as virtual pods behind Karpenter's CapacityBuffer feature gate. It
// decides names, shapes and validation; pkg/controllers/capacitybuffer
// resolves buffers and the provisioner plans them.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
