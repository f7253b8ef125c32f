// Package catalog is joiner's built-in, AWS-like instance catalog: real EC2
// family and size shapes (vCPU, memory, GPUs, local NVMe, ENI limits) with
// us-east-1-like on-demand prices and deterministic, zone-varying spot
// prices, labelled in Karpenter's karpenter.k8s.aws/* vocabulary.
//
// It feeds `joiner simulate` when no catalog is given and is what the
// simulated cloud launches, so both see the same machines. Everything is
// computed from static tables: the same Options always give the same
// instance types, in the same order. The package never calls a cloud.
//
// Node overhead follows the EKS AMI and Karpenter defaults: pods from the
// VPC CNI formula ENIs × (IPv4 per ENI − 1) + 2, capped at 110 unless
// configured; kube-reserved cpu of 6% of the first core, 1% of the second,
// 0.5% of the third and fourth and 0.25% of every further core; kube-reserved
// memory of 11 MiB per pod plus 255 MiB; 1 GiB of kube-reserved
// ephemeral-storage on a 20 GiB root volume; eviction thresholds of 100 MiB
// memory and 10% of ephemeral-storage.
package catalog
