package aws

import (
	"context"

	"fmt"
	corev1 "k8s.io/api/core/v1"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Drift reasons (§3.11).
const (
	DriftNodeClass     cloudprovider.DriftReason = "NodeClassDrift"
	DriftAMI           cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet        cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup cloudprovider.DriftReason = "SecurityGroupDrift"
)

// IsDrifted implements cloudprovider.CloudProvider. The static hash check
// runs first (no API call); the others read the instance.
func (p *Provider) IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		return "", fmt.Errorf("checking drift of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if h, ok := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]; ok &&
		nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion && h != nc.Hash() {
		return DriftNodeClass, nil
	}
	id, err := parseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.describeOne(ctx, id)
	if err != nil {
		return "", fmt.Errorf("checking drift of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if inst == nil {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	if !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == aws.ToString(inst.ImageId) }) {
		return DriftAMI, nil
	}
	if !slices.ContainsFunc(nc.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == aws.ToString(inst.SubnetId) }) {
		return DriftSubnet, nil
	}
	// An instance in a VPC always has a security group; one that reports
	// none (moto's CreateFleet does not apply a launch template's groups)
	// cannot be judged, and an unjudged instance is not replaced.
	if len(inst.SecurityGroups) == 0 {
		return "", nil
	}
	var have, want []string
	for _, g := range inst.SecurityGroups {
		have = append(have, aws.ToString(g.GroupId))
	}
	for _, g := range nc.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	slices.Sort(have)
	slices.Sort(want)
	if slices.Equal(slices.Compact(have), slices.Compact(want)) {
		return "", nil
	}
	foreign, err := p.foreignGroups(ctx, inst, have)
	if err != nil {
		return "", fmt.Errorf("checking drift of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	if foreign {
		return "", nil
	}
	return DriftSecurityGroup, nil
}

// foreignGroups reports whether one of an instance's security groups is
// not in the instance's VPC. EC2 refuses such a group, so an instance that
// reports one cannot be judged: moto's CreateFleet gives a spot instance
// the default VPC's "default" group instead of its launch template's. It
// costs a call only when the groups already differ.
func (p *Provider) foreignGroups(ctx context.Context, inst *ec2types.Instance, ids []string) (bool, error) {
	vpc := aws.ToString(inst.VpcId)
	if vpc == "" {
		return false, nil
	}
	out, err := p.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: ids})
	if err != nil {
		return false, fmt.Errorf("describing security groups %v of instance %s: %w", ids, aws.ToString(inst.InstanceId), err)
	}
	return slices.ContainsFunc(out.SecurityGroups, func(g ec2types.SecurityGroup) bool { return aws.ToString(g.VpcId) != vpc }), nil
}

// schedulingType wraps a capacity with the node class's overhead.
func schedulingType(capacity corev1.ResourceList, nc *awsv1.EC2NodeClass) *scheduling.InstanceType {
	return &scheduling.InstanceType{Capacity: capacity, Overhead: overhead(capacity, nc.Spec.Kubelet)}
}
