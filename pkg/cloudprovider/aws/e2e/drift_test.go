package e2e

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
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
