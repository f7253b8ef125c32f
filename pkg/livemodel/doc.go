// Package livemodel builds the snapshot of the live cluster that joiner
// decides on: the solver's Snapshot assembled from pkg/state (Nodes and
// in-flight NodeClaims with their bound and nominated pods, DaemonSets) and
// the informer cache (NodePools with their instance types and launch
// back-offs, pending pods, volumes, namespaces), with each NodePool's live
// usage counted against its limits.
//
// It is its own package because three deciders must see the same picture:
// the provisioner plans on it, the disruption controller simulates
// consolidation on it, and the status page shows it. A change here changes
// all three at once, on purpose.
//
// The package only reads: it creates nothing (pkg/nodeclaims does) and
// nominates nothing (provisioning does).
package livemodel
