// Package sim is joiner's embedded simulated cloud, the default cloud
// provider: an in-process cloud whose instances become Kubernetes Nodes the
// way real machines do.
//
// Three parts, wired by the operator:
//
//   - Store: the instance database, a JSON file guarded by flock(2) and
//     rewritten atomically, so instances survive a controller restart and
//     two joiner processes can share one cloud.
//   - Provider: the cloudprovider.CloudProvider. Its catalog comes from
//     pkg/catalog, narrowed by the SimNodeClass (zones, instance families);
//     Create picks the cheapest available offering the NodeClaim allows and
//     records the instance with its cluster identity tag
//     (sim.joiner.dev/cluster) and the NodePool/NodeClaim tags; Get, List
//     and Delete only ever act on instances whose cluster tag is this
//     cluster's. Failed offerings (injected insufficient capacity, a subnet
//     out of IP addresses) are remembered as unavailable for a while, as a
//     real provider's ICE cache does.
//   - Machines: a manager.Runnable playing the machines themselves. After
//     the node class's launch delay an instance runs; after the registration
//     delay its kubelet registers a Node with the instance's labels, the
//     NodeClaim's labels, capacity, allocatable, providerID
//     sim:///<zone>/<instance-id>, the karpenter.sh/unregistered:NoExecute
//     taint and the NodeClaim's taints and startup taints. kwok, run by the
//     control-plane harness, keeps those Nodes Ready and runs their pods.
//     When an instance is terminated its Node is deleted. Each machine also
//     runs a DRA device driver (devices.go): once its Node registers, the
//     machine's GPUs (pkg/dra's table for its instance type) are published
//     in ResourceSlices that kube-scheduler's DRA plugin allocates from;
//     what is imitated is the driver's node-side work (preparing devices
//     for containers), which kwok does not call.
//
// The SimNodeClass fault switches are applied at launch, as user data is:
// neverRegister, dropStartupTaints, unregisteredTaintMissing and
// wrongArchitecture change what the machine registers;
// insufficientCapacity and subnetIPExhaustedZones make Create fail.
//
// CallFaults (--sim-call-faults / SIM_CALL_FAULTS, faults.go) make the
// cloud's API misbehave at seeded rates: throttling, 500s, insufficient
// capacity, slow creates, and ghost instances (launched while the caller
// sees an error). The chaos suite (test/chaos) runs joiner against them.
//
// The package never decides what to launch or when; it only does what the
// controllers ask, as a cloud would.
package sim
