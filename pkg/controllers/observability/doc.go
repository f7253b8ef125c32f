// Package observability publishes Karpenter's cluster state gauges:
// per-node allocatable, overhead, pod and DaemonSet requests and limits
// (karpenter_nodes_*), every pod's placement (karpenter_pods_state), pod
// startup and binding latencies, NodePool usage and limits, cluster
// utilization, and the cloud's instance types and offerings
// (karpenter_cloudprovider_instance_type_*). It reads the cluster state and
// the manager's cache on a timer and decides nothing; it is off with
// DISABLE_CLUSTER_STATE_OBSERVABILITY.
package observability
