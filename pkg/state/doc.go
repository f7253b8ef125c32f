// Package state is joiner's in-memory model of the cluster: Nodes,
// NodeClaims, the pods bound to them, DaemonSets, the provisioner's
// nominations and each NodePool's usage. Small controller-runtime
// reconcilers (state.node, state.nodeclaim, state.pod, state.daemonset)
// keep it fed from the manager's informer cache; the provisioner, the
// NodePool counter and (later) disruption read it.
//
// A Node and its NodeClaim are joined by provider ID into one StateNode; a
// NodeClaim that has not launched yet is a StateNode of its own, keyed by
// name, until its provider ID is known. The provisioner records each
// NodeClaim it creates (NodeClaimCreated) so the next batch sees it before
// the informer does; the model is the only record of in-flight capacity.
//
// One file per concern: cluster.go holds the model (Nodes, NodeClaims,
// pods and the reads that join them), nomination.go the provisioner's
// nominations (Nominations, one type behind two narrow interfaces:
// NominationReader for readers, Nominator for the provisioner, the one
// writer), their windows, their ends and the decision times behind the
// karpenter_pods_provisioning_* metrics, deletion.go the marks of nodes about to go,
// daemonsets.go the DaemonSets' pods, volumelimits.go the CSI attach
// limits, nodepool.go each NodePool's usage, synced.go the sync check.
//
// What it decides: nothing. It answers questions about what is, and it
// knows whether it has seen everything the API server has (Synced);
// consumers must not act on a state that is not synced.
//
// Concurrency: one sync.RWMutex guards every map in Cluster. Writers (the
// reconcilers, Nominations.Nominate, MarkForDeletion) take the write lock for a single
// map update and never call out while holding it. Readers take the read
// lock and return deep copies, so no pointer into the model ever escapes
// and callers may mutate what they get. Synced lists from the API server
// without holding the lock, then compares under the read lock; a positive
// result is reused for Options.SyncedRecheckInterval.
package state
