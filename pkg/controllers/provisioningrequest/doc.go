// Package provisioningrequest serves autoscaling.x-k8s.io/v1
// ProvisioningRequests, the API Cluster Autoscaler serves and Kueue's
// ProvisioningRequest admission check drives, for two classes:
//
//   - check-capacity.autoscaling.x-k8s.io: do the request's pods fit the
//     existing nodes (and in-flight NodeClaims) now? The solver answers on
//     the capacity that exists, with the NodePools left out, in the first
//     reconcile after the request is seen; nothing is launched. Found room
//     is booked for the request's pods.
//   - best-effort-atomic-scale-up.autoscaling.x-k8s.io: the solver plans
//     every pod of the request as one unit; if any pod fits nowhere, nothing
//     is created. The planned NodeClaims are launched all or none: in one
//     all-or-nothing call where the cloud can (cloudprovider.GroupLauncher:
//     one EC2 instant fleet with MinTargetCapacity on AWS, the same on the
//     simulated cloud), else one by one, and if any fails within the launch
//     TTL every NodeClaim of the request is deleted (the lifecycle
//     terminates their instances) and the request retries with back-off
//     until its ValidUntilSeconds, then is marked Failed with the reason.
//
// Once Provisioned, the capacity is booked for the request's pods (those
// annotated autoscaling.x-k8s.io/consume-provisioning-request): the
// provisioner counts placeholder pods on the booked nodes, so other pods do
// not take the room, leaves the consuming pods to kube-scheduler instead of
// planning them one by one, and the booked NodeClaims carry
// karpenter.sh/do-not-disrupt so consolidation leaves them alone. The
// booking ends when every pod of the request is bound, or after the
// booking time (10 minutes, as Cluster Autoscaler): BookingExpired. A
// NodeClaim of the request that goes away before its pods came marks the
// request CapacityRevoked.
//
// A booking lives in the API server, not in joiner's memory: the request's
// status names its NodeClaims and the pods it placed on existing capacity,
// and each reconcile holds the booking again from them. After a start,
// Bookings.Synced is false until every request that existed has been
// reconciled once; provisioning and disruption wait for it.
//
// Requests of other classes are left alone. The package never launches an
// instance itself except through the cloud's GroupLauncher, and never
// binds a pod.
package provisioningrequest
