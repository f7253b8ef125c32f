package e2e

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// A spot instance launched through CreateFleet is not drifted although
// moto gives it the default VPC's "default" group instead of its launch
// template's (joiner run's replacement nodes were deleted as
// SecurityGroupDrift); an instance whose groups, in its own VPC, differ
// from the node class's still drifts.
func TestSecurityGroupDrift(t *testing.T) {
	ctx := context.Background()
	e := ec2.NewFromConfig(local.server.Config())
	other, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(t.Name() + "-other"), Description: aws.String("not the node class's"), VpcId: aws.String(local.cluster.VPCID),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		capacityType string
		// groups replaces the instance's security groups when set.
		groups []string
		want   string
	}{
		{name: "spot, moto's default group", capacityType: v1.CapacityTypeSpot},
		{name: "on-demand, no group", capacityType: v1.CapacityTypeOnDemand},
		{name: "the node class's group", capacityType: v1.CapacityTypeOnDemand, groups: []string{local.cluster.SecurityGroupID}},
		{name: "another group of the VPC", capacityType: v1.CapacityTypeSpot, groups: []string{aws.ToString(other.GroupId)}, want: "SecurityGroupDrift"},
		{name: "an extra group of the VPC", capacityType: v1.CapacityTypeSpot, groups: []string{local.cluster.SecurityGroupID, aws.ToString(other.GroupId)}, want: "SecurityGroupDrift"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, "cluster-a")
			nc := readyNodeClass(t, p, nodeClass(t))
			claim := nodeClaim(t, nc)
			claim.Spec.Requirements[0].Values = []string{"m5.large"}
			claim.Spec.Requirements[1].Values = []string{tc.capacityType}
			got, err := p.Create(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if got.Labels[v1.LabelCapacityType] != tc.capacityType {
				t.Fatalf("launched %s, want %s", got.Labels[v1.LabelCapacityType], tc.capacityType)
			}
			if tc.groups != nil {
				inst := describeInstance(t, got.Status.ProviderID)
				if _, err := e.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: inst.InstanceId, Groups: tc.groups}); err != nil {
					t.Fatal(err)
				}
			}
			claim.Status, claim.Annotations = got.Status, got.Annotations
			reason, err := p.IsDrifted(ctx, claim)
			if err != nil || string(reason) != tc.want {
				inst := describeInstance(t, got.Status.ProviderID)
				t.Errorf("IsDrifted = %q, %v; want %q (instance groups %+v, node class groups %+v)", reason, err, tc.want, inst.SecurityGroups, nc.Status.SecurityGroups)
			}
		})
	}
}

// AMIDrift and SubnetDrift on the local EC2: an instance launched from a
// node class whose resolved images (or subnets) later no longer include
// the instance's is drifted with that reason; the selector terms are not
// part of the static hash, so the instance reaches the dynamic checks.
func TestAMIAndSubnetDrift(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(nc *awsv1.EC2NodeClass, inst ec2types.Instance)
		want   string
	}{
		{name: "unchanged", change: func(*awsv1.EC2NodeClass, ec2types.Instance) {}},
		{name: "images resolve to another AMI", want: "AMIDrift", change: func(nc *awsv1.EC2NodeClass, _ ec2types.Instance) {
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: local.cluster.AMI("AL2023", "arm64").ID}, {ID: local.cluster.AMIVariant("AL2023", "x86_64", "nvidia").ID}}
			nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2023)
		}},
		{name: "subnets no longer include the instance's", want: "SubnetDrift", change: func(nc *awsv1.EC2NodeClass, inst ec2types.Instance) {
			var other string
			for _, s := range local.cluster.Subnets {
				if s.ID != aws.ToString(inst.SubnetId) {
					other = s.ID
				}
			}
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: other}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, "cluster-a")
			nc := readyNodeClass(t, p, nodeClass(t))
			claim := nodeClaim(t, nc)
			claim.Spec.Requirements[0].Values = []string{"m5.large"}
			got, err := p.Create(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			claim.Status, claim.Annotations = got.Status, got.Annotations
			inst := describeInstance(t, got.Status.ProviderID)
			env := test.Env(t)
			stored := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), stored); err != nil {
				t.Fatal(err)
			}
			tc.change(stored, inst)
			if err := env.Client.Update(ctx, stored); err != nil {
				t.Fatal(err)
			}
			after := reconcileNodeClass(t, p, nc.Name)
			if !after.IsReady() {
				t.Fatalf("EC2NodeClass not Ready after the change: %+v", after.Status.Conditions)
			}
			if after.Hash() != nc.Hash() {
				t.Fatalf("the change altered the static hash (%s -> %s); the test would see NodeClassDrift", nc.Hash(), after.Hash())
			}
			reason, err := p.IsDrifted(ctx, claim)
			if err != nil || string(reason) != tc.want {
				t.Errorf("IsDrifted = %q, %v; want %q (instance %s in %s, status amis %+v subnets %+v)", reason, err, tc.want,
					aws.ToString(inst.ImageId), aws.ToString(inst.SubnetId), after.Status.AMIs, after.Status.Subnets)
			}
		})
	}
}
