// Package capacitybuffer turns autoscaling.x-k8s.io/v1beta1 CapacityBuffers
// into what joiner plans: how many chunks a buffer asks for (Chunks: its
// replicas, percentage of a workload, resource limits and the namespace's
// ResourceQuotas), the virtual pods of the chunk's shape (VirtualPods), the
// set in force (Store, read by pkg/livemodel) and how a plan treated each
// buffer's pods (Outcomes, written to the buffer's Provisioning condition
// and kept in the Store as each buffer's Room: the NodePools, nodes and
// NodeClaims holding its chunks and why any are short, which the
// controller view and the status page publish).
//
// Virtual pods never exist in the API server. The solver places them after
// every real pod (the lowest priority), the provisioner launches the nodes
// they need but never nominates them nor gives them events, and
// consolidation keeps room for them on the nodes they would occupy. The
// package decides nothing about placement and never writes to the API
// server: pkg/controllers/capacitybuffer resolves buffers and reports
// their status.
package capacitybuffer
