package sim

// The simulated cloud plays the kubelet of the machines it runs: it
// creates their Node objects, writes their status and deletes them. Only
// the simulated cloud needs this, so `make generate` writes these markers
// into their own role (config/rbac/sim/role.yaml), which the Helm chart
// grants only with settings.cloudProvider=sim; the AWS provider's nodes
// register themselves.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=update
