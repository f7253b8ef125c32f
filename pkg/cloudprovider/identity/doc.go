// Package identity says who this cluster is to a cloud: its unique id (the
// UID of its kube-system namespace), which each provider writes beside the
// human-chosen cluster name on the instances it launches, and the one report
// of another cluster found using this cluster's name (seed 004: two clusters
// deployed from one template, each garbage-collecting the other's nodes).
//
// Both cloud providers, the simulated one and AWS, and doctor ask it; it
// never decides ownership itself (each provider reads its own tags), and it
// never touches an instance.
package identity
