// Package nomination is the controller that tells kube-scheduler where
// joiner planned each pending pod: it keeps the pod's
// status.nominatedNodeName on the Node of the NodeClaim the provisioner
// nominated it to (KEP-5278), moves the value joiner owns as the plan
// changes, and clears it when the nomination ends or the pod binds
// elsewhere.
//
// The nominations themselves, with their windows and ends, are
// state.Nominations: the provisioner writes them, this controller and
// the others read them through state.NominationReader. The package never
// plans a pod and never touches a value someone else (kube-scheduler
// preempting) wrote.
package nomination
