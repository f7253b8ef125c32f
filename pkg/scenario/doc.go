// Package scenario builds a scheduling.Snapshot from files a person or a
// benchmark hands to joiner:
//
//   - the shared scenario JSON (meta, instanceTypes, nodePools, pods), read by
//     Load and LoadFile;
//   - Kubernetes YAML as written by hand or dumped by `kubectl get -o yaml`
//     (NodePools, Pods, Deployments, ReplicaSets, StatefulSets, Jobs,
//     DaemonSets, Nodes, PVCs, PVs, StorageClasses; multi-document files and
//     `kind: List`), read by Manifests;
//   - an instance-type catalog as JSON, read by LoadInstanceTypes.
//
// Loading is strict: every error names the object (by index and name) and
// the field, such as
// `instanceTypes[3] "fake-it-3": offerings[1].price: must be >= 0`.
// The package decides nothing about scheduling; it only reads, validates and
// adapts, so the solver sees the same Snapshot whatever the source.
package scenario
