package localec2

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// The placement front serves capacity reservations and placement groups
// through aws-sdk-go-v2 as EC2 does: a targeted launch lands in its
// reservation until it is full, then fails with ReservationCapacityExceeded;
// a termination gives the room back; an untargeted on-demand launch uses an
// open reservation unless its template says none; an unknown placement
// group refuses the launch; partition numbers are handed out in turn and
// DescribeInstances reports all of it.
func TestPlacementFrontServesReservationsAndGroups(t *testing.T) {
	ctx := context.Background()
	srv, cl, err := StartSeeded(ctx, StartOptions{}, SeedOptions{ClusterName: "placement", KubernetesVersions: []string{"1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	front := NewPlacementFront(nil)
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: front}
	api := ec2.NewFromConfig(cfg)
	subnet := cl.Subnets[0]

	res, err := api.CreateCapacityReservation(ctx, &ec2.CreateCapacityReservationInput{
		InstanceType: aws.String("m5.large"), InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
		AvailabilityZone: aws.String(subnet.Zone), InstanceCount: aws.Int32(2), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeCapacityReservation, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	crID := aws.ToString(res.CapacityReservation.CapacityReservationId)
	open := front.AddReservation(Reservation{InstanceType: "c5.large", Zone: subnet.Zone, Count: 1})
	if _, err := api.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("training"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)}); err != nil {
		t.Fatal(err)
	}
	template := func(name string, data *ec2types.RequestLaunchTemplateData) {
		t.Helper()
		data.ImageId = aws.String(cl.AMI("AL2023", "x86_64").ID)
		if _, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data}); err != nil {
			t.Fatal(err)
		}
	}
	template("reserved", &ec2types.RequestLaunchTemplateData{
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(crID)}},
		Placement:                        &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("training")},
	})
	template("plain", &ec2types.RequestLaunchTemplateData{})
	template("none", &ec2types.RequestLaunchTemplateData{CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone}})
	template("lost", &ec2types.RequestLaunchTemplateData{Placement: &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("no-such-group")}})

	fleet := func(lt, typ string, n int32) *ec2.CreateFleetOutput {
		t.Helper()
		out, err := api.CreateFleet(ctx, &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(subnet.ID)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ids := func(out *ec2.CreateFleetOutput) []string {
		var all []string
		for _, fi := range out.Instances {
			all = append(all, fi.InstanceIds...)
		}
		return all
	}
	codes := func(out *ec2.CreateFleetOutput) []string {
		var all []string
		for _, e := range out.Errors {
			all = append(all, aws.ToString(e.ErrorCode))
		}
		return all
	}
	available := func(id string) int32 {
		t.Helper()
		out, err := api.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount)
	}

	// Three asked, two fit: the third is reported as EC2 reports it.
	first := fleet("reserved", "m5.large", 3)
	if got := ids(first); len(got) != 2 {
		t.Fatalf("a fleet of 3 into a reservation of 2 launched %v, want 2", got)
	}
	if c := codes(first); len(c) != 1 || c[0] != "ReservationCapacityExceeded" {
		t.Errorf("the shortfall was reported as %v, want [ReservationCapacityExceeded]", c)
	}
	if n := available(crID); n != 0 {
		t.Errorf("available after filling it = %d, want 0", n)
	}
	if out := fleet("reserved", "m5.large", 1); len(ids(out)) != 0 || len(codes(out)) != 1 || codes(out)[0] != "ReservationCapacityExceeded" {
		t.Errorf("a launch into the full reservation: instances %v errors %v, want none and ReservationCapacityExceeded", ids(out), codes(out))
	}
	if out := fleet("reserved", "m5.xlarge", 1); len(codes(out)) != 1 || codes(out)[0] != "InvalidParameterCombination" {
		t.Errorf("a launch of another type into the reservation: errors %v, want InvalidParameterCombination", codes(out))
	}
	if out := fleet("lost", "m5.large", 1); len(ids(out)) != 0 || len(codes(out)) != 1 || codes(out)[0] != "InvalidPlacementGroup.Unknown" {
		t.Errorf("a launch into an unknown placement group: instances %v errors %v, want InvalidPlacementGroup.Unknown", ids(out), codes(out))
	}

	desc, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids(first)})
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[int32]bool{}
	for _, r := range desc.Reservations {
		for _, inst := range r.Instances {
			if aws.ToString(inst.CapacityReservationId) != crID || aws.ToString(inst.Placement.GroupName) != "training" {
				t.Errorf("instance %s: reservation %q group %q, want %s and training", aws.ToString(inst.InstanceId), aws.ToString(inst.CapacityReservationId), aws.ToString(inst.Placement.GroupName), crID)
			}
			if aws.ToString(inst.Placement.AvailabilityZone) != subnet.Zone {
				t.Errorf("instance %s lost its zone: %q", aws.ToString(inst.InstanceId), aws.ToString(inst.Placement.AvailabilityZone))
			}
			partitions[aws.ToInt32(inst.Placement.PartitionNumber)] = true
		}
	}
	if !partitions[1] || !partitions[2] {
		t.Errorf("partitions %v, want 1 and 2 handed out in turn", partitions)
	}

	if _, err := api.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids(first)[:1]}); err != nil {
		t.Fatal(err)
	}
	if n := available(crID); n != 1 {
		t.Errorf("available after a termination = %d, want 1", n)
	}

	// Untargeted on-demand: "none" stays out of the open reservation,
	// the default preference uses it.
	fleet("none", "c5.large", 1)
	if n := available(open); n != 1 {
		t.Errorf("a launch with preference none took the open reservation (available %d)", n)
	}
	fleet("plain", "c5.large", 1)
	if n := available(open); n != 0 {
		t.Errorf("an untargeted on-demand launch left the open reservation unused (available %d)", n)
	}

	got, err := api.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:team"), Values: []string{"ml"}}, {Name: aws.String("state"), Values: []string{"active"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.CapacityReservations) != 1 || aws.ToString(got.CapacityReservations[0].CapacityReservationId) != crID {
		t.Errorf("the tag filter found %+v, want only %s", got.CapacityReservations, crID)
	}
	var apiErr smithy.APIError
	if _, err := api.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0000000000000dead"}}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("describing an unknown reservation: %v, want InvalidCapacityReservationId.NotFound", err)
	}
	if _, err := api.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidPlacementGroup.Unknown" {
		t.Errorf("describing an unknown placement group: %v, want InvalidPlacementGroup.Unknown", err)
	}
	groups, err := api.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}})
	if err != nil || len(groups.PlacementGroups) != 1 || groups.PlacementGroups[0].Strategy != ec2types.PlacementStrategyPartition || aws.ToInt32(groups.PlacementGroups[0].PartitionCount) != 3 {
		t.Errorf("DescribePlacementGroups: %+v, %v", groups, err)
	}
}
