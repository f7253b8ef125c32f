// Package v1alpha1 holds the sim.joiner.dev/v1alpha1 API: the SimNodeClass,
// the node class of joiner's simulated cloud. Every local run and test
// launches nodes through it instead of an EC2NodeClass.
//
// Besides describing the simulated environment (region, zones, instance
// catalog, launch and registration delays), a SimNodeClass carries fault
// switches. Each one reproduces a failure users hit with Karpenter on AWS
// (nodes that never join, lost startup taints, wrong architecture labels,
// insufficient capacity, exhausted subnets), so joiner's handling of that
// failure can be exercised without a cloud account.
//
// The package decides names, shapes and defaults. It never simulates
// anything itself: the simulated cloud provider reads these objects.
//
// +kubebuilder:object:generate=true
// +groupName=sim.joiner.dev
package v1alpha1
