// Package status holds the condition helpers shared by every joiner kind
// with a status (NodePool, NodeClaim and the node classes).
//
// Conditions are plain []metav1.Condition. A ConditionSet wraps one object
// and keeps its root condition (Ready) rolled up from a fixed list of
// dependent conditions whenever one of them is set. It only edits the
// object in memory; writing the status back is the caller's job.
package status
