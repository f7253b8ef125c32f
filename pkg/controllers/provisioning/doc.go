// Package provisioning turns unschedulable pods into NodeClaims.
//
// A pod trigger watches pods the scheduler marked Unschedulable (not bound,
// not DaemonSet-owned, not terminating) and feeds a Batcher, which closes a
// window after 1 s without a new pod or 10 s in all. A pod still nominated
// (below) feeds it only when its nomination ends: kube-scheduler rewrites
// every pending pod's status at each attempt, and in a burst those
// rewrites held every window open to its 10 s. A pass that fails is tried
// again after 1 s, backing off to 30 s. The Provisioner, a
// leader-elected singleton, then waits for the cluster state to be synced,
// takes the live model's snapshot (pkg/livemodel: NodePools with their
// instance types from the cloud provider, Nodes and in-flight NodeClaims
// with their pods, DaemonSets and volumes), calls the solver and creates
// one NodeClaim per planned node through pkg/nodeclaims, as planned:
// NodePool limits (against the usage of existing and in-flight NodeClaims,
// given to the solver as InUse) and the instance-type cap are the solver's
// to apply. NodeClaim names derive from the pods they
// carry, so a retried batch or a second replica cannot create a duplicate.
// Every placed pod gets a Nominated event; every pod that fits nowhere gets
// one FailedScheduling event with its reasons grouped per NodePool, and the
// batch gets one log line that groups those pods by reason.
//
// A planned pod stays nominated to its NodeClaim (not planned again) while
// the NodeClaim launches and registers, and then for Karpenter's window,
// max(2 × batch max, 10 s), after the plan or the node's initialisation,
// whichever is later. A pod still pending half a window before its
// nomination lapses (kube-scheduler can take minutes to bind on a loaded
// control plane) is planned again then, while the nomination still counts,
// onto the room it holds, and nominated there anew: as in Karpenter, whose
// every pass plans the pending pods again and nominates the nodes they
// would go to, a node stays nominated (no disruption candidate) while
// pending pods count on it, and is never planned twice. The nomination
// ends sooner: the pod gets a
// NominationEnded event and the next batch plans it at once when the
// NodeClaim fails or goes away, or when its node initialised and
// kube-scheduler still rejected the pod. The nominations are
// state.Nominations, which the provisioner writes through the narrow
// state.Nominator (nominate, release, the ends); the controller in
// pkg/controllers/nomination keeps kube-scheduler from giving a planned
// pod's room away in the first place: it sets the pod's
// status.nominatedNodeName to the NodeClaim's Node (KEP-5278) just before
// registration removes the unregistered taint (HoldRoom), again after each
// clearing by kube-scheduler once the Node is registered, and moves or
// clears the value it owns as the plan changes.
//
// The package never launches instances (the NodeClaim lifecycle does) and
// never binds pods (kube-scheduler does, once the node is ready).
package provisioning
