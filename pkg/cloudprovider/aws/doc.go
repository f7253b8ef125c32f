// Package aws is joiner's AWS cloud provider, on aws-sdk-go-v2: the
// cloudprovider.CloudProvider for EC2NodeClasses (karpenter.k8s.aws/v1) and
// the EC2NodeClass status controller.
//
// What it decides, and where:
//
//   - nodeclass*.go: an EC2NodeClass's subnets, security groups, AMIs
//     (selector terms, aliases through SSM under a configurable parameter
//     root) and instance profile (created from spec.role, or taken from
//     spec.instanceProfile), written as Karpenter writes them, with the
//     conditions SubnetsReady, SecurityGroupsReady, AMIsReady,
//     InstanceProfileReady, ValidationSucceeded and Ready. Selector terms
//     that match nothing, unknown roles and unknown alias families are
//     named in the condition messages.
//   - instancetypes.go, capacity.go, labels.go: the instance types and
//     offerings a NodePool may launch, from DescribeInstanceTypes and
//     DescribeInstanceTypeOfferings (cached), with capacity, overhead and
//     karpenter.k8s.aws/* labels computed as Karpenter computes them.
//   - pricing.go: on-demand prices from the Pricing API, spot prices from
//     DescribeSpotPriceHistory, refreshed on a timer; a generated table
//     (zz_generated_prices.go) when the Pricing API cannot be reached.
//   - launch.go, launchtemplates.go, fleet.go: Create, through launch
//     templates shared by identical configurations and CreateFleet (type
//     instant), with concurrent identical requests batched into one call.
//   - reservations.go, placementgroup.go: capacityReservationSelectorTerms
//     (status.capacityReservations, reserved offerings and their room left,
//     CapacityReservationsReady) and placementGroupSelector
//     (PlacementGroupReady), and where launch templates place instances.
//   - unavailable.go: the ICE cache (offerings) and exhausted subnets.
//   - instances.go, batcher.go: Get, List and Delete (DescribeInstances and
//     TerminateInstances batched across callers), which act only on instances
//     carrying this cluster's identity (eks:eks-cluster-name and joiner's
//     cluster-id tag, the kube-system namespace UID).
//   - drift.go: IsDrifted (AMI, subnet, security group, NodeClass hash).
//
// It never decides which instance type a pod needs (pkg/scheduling does)
// and never writes userData itself: Options.UserData generates it.
package aws
