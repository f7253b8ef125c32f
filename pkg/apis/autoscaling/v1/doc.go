// Package v1 holds autoscaling.x-k8s.io/v1, the ProvisioningRequest API as
// Cluster Autoscaler serves it: a request for the capacity a set of pods
// (PodTemplates with counts) needs, answered through status conditions.
// Kueue's ProvisioningRequest admission check creates these objects and
// admits a workload only once the request is Provisioned, so serving the
// same API (same group, version, fields and condition types) is what lets
// batch and AI workloads ask joiner for all-or-nothing capacity.
//
// The package decides names, shapes and validation. It never provisions:
// pkg/controllers/provisioningrequest reads these objects.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1
