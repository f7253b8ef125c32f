// Package garbagecollection reconciles the cloud with the cluster's
// NodeClaims, periodically and in both directions:
//
//   - an instance this cluster owns (as the cloud provider's List proves by
//     its cluster identity tag) that no NodeClaim points at (by
//     status.providerID, or, while its launch is being recorded, by the
//     NodeClaim UID the instance is tagged with), launched longer
//     ago than the grace period, is an orphan: it is terminated and its Node,
//     if one registered, deleted;
//   - a launched NodeClaim whose instance the cloud no longer has (absent
//     from List and confirmed NotFound by Get) is deleted, so termination
//     cleans up and the provisioner replaces its capacity; one whose
//     instance Get reports as existing but not this cluster's (NotOwned:
//     launched before a migration to joiner, or before a restore changed
//     the kube-system UID) is kept, with an InstanceNotOwned event naming
//     the fix.
//
// Each action gets an event and a log line. It never looks at instances the
// provider does not list, so another cluster's instances are never touched,
// and it never deletes anything younger than the grace period, which covers
// the race between a launch and the NodeClaim status patch that records it.
package garbagecollection
