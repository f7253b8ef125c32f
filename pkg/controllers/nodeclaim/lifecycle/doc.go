// Package lifecycle drives a NodeClaim from creation to a Node that is ready
// for pods, one step per file, in order, with one status patch per
// reconcile:
//
//   - launch.go: ask the cloud for an instance; record providerID, capacity,
//     allocatable, imageID and labels; Launched. Insufficient capacity or a
//     node class that is not ready deletes the NodeClaim (with an event) so
//     the provisioner retries elsewhere; other failures leave Launched
//     Unknown with the cloud's reason and back off.
//   - registration.go: find the Node by provider ID; sync labels,
//     annotations and taints onto it, own it, add the termination
//     finalizer, label it registered and remove karpenter.sh/unregistered;
//     Registered. Bootstrap mistakes (no unregistered taint, missing startup
//     taints, the legacy karpenter.sh/uninitialized taint) are reported as
//     Warning events that say what to fix.
//   - initialization.go: Initialized once the Node is Ready, its startup and
//     ephemeral taints are gone and every extended resource requested or
//     promised by the instance type (status.capacity) is allocatable; a
//     Node of the wrong architecture is reported, not waited on silently.
//   - liveness.go: a NodeClaim that does not launch within the launch TTL,
//     or register within the registration TTL, is deleted with an event
//     that says why and what to check.
//
// Deleting a managed Node deletes its NodeClaim too; node termination
// (pkg/controllers/node/termination) does that as its first step.
//
// What it never does: act on a NodeClaim that is being deleted (termination
// owns those), terminate instances, or drain nodes. One exception: an
// instance it launched for a NodeClaim that was deleted before the provider
// ID was recorded is invisible to termination, so launch.go deletes it at
// once rather than leave it to garbage collection.
package lifecycle
