// Package termination drains and removes Nodes that joiner manages.
//
// A managed Node carries the karpenter.sh/termination finalizer. When the
// Node is deleted (by a user, by the NodeClaim's termination, or by
// disruption), this controller: deletes the owning NodeClaim too, so the two
// always go together; taints the Node karpenter.sh/disrupted:NoSchedule so
// nothing new lands on it; drains it through the Eviction API, which honours
// PodDisruptionBudgets, in Karpenter's order (ordinary pods, then DaemonSet
// pods, then system-critical pods, then critical DaemonSet pods); waits for
// volumes to detach; terminates the instance; and only then removes the
// finalizer.
//
// It never force-deletes a pod before the NodeClaim's terminationGracePeriod
// deadline (the karpenter.sh/nodeclaim-termination-timestamp annotation).
// Once the deadline nears, pods are deleted with a grace period that ends at
// the deadline, PDBs and karpenter.sh/do-not-disrupt notwithstanding, which is
// what terminationGracePeriod promises the user.
package termination
