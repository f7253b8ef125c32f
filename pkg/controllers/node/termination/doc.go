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
//
// Every pass reads from the manager's cache, which can lag minutes behind a
// Node that kubelet (or kwok) heartbeats. Its writes (the taint and load
// balancer label, the finalizer's removal, the NodeClaim's conditions)
// rewrite lists whole, so they go under optimistic locking; one that
// conflicts is computed again on the API server's own copy and written
// with that copy's resourceVersion, so a lagging cache slows a write by one
// read, never fails it pass after pass, and never drops another writer's
// taint, finalizer or condition.
package termination
