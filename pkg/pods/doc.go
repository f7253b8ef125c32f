// Package pods says what a pod is to an autoscaler: whether a DaemonSet or
// the kubelet places it, whether it has finished, whether it must find
// another node when its node goes (reschedulable), whether a drain evicts
// it, whether karpenter.sh/do-not-disrupt protects it at a given time, and
// what it requests.
//
// Each predicate is the one definition in the tree: the solver, the cluster
// state, provisioning, disruption, the drain, explain, doctor and the
// offline scenario adapter all ask this package, and .golangci.yml forbids
// writing the checks again elsewhere. The package is pure: it reads pods,
// never the API server, and takes the time as an argument.
package pods
