// Package provisioning turns unschedulable pods into NodeClaims.
//
// A pod trigger watches pods the scheduler marked Unschedulable (not bound,
// not DaemonSet-owned, not terminating) and feeds a Batcher, which closes a
// window after 1 s without a new pod or 10 s in all. The Provisioner, a
// leader-elected singleton, then waits for the cluster state to be synced,
// snapshots NodePools (with their instance types from the cloud provider),
// Nodes and in-flight NodeClaims with their pods, DaemonSets and volumes,
// calls the solver and creates one NodeClaim per planned node, as planned:
// NodePool limits (against the usage of existing and in-flight NodeClaims,
// given to the solver as InUse) and the instance-type cap are the solver's
// to apply. NodeClaim names derive from the pods they
// carry, so a retried batch or a second replica cannot create a duplicate.
// Every placed pod gets a Nominated event; every pod that fits nowhere gets
// one FailedScheduling event with its reasons grouped per NodePool, and the
// batch gets one log line that groups those pods by reason.
//
// The package never launches instances (the NodeClaim lifecycle does) and
// never binds pods (kube-scheduler does, once the node is ready).
package provisioning
