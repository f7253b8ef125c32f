// Package nodepool holds the controllers that maintain a NodePool's status:
// counter (status.resources and status.nodes from cluster state) and
// readiness (NodeClassReady, ValidationSucceeded and the Ready rollup).
// Neither launches, deletes or changes any node.
package nodepool
