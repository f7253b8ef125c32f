package localec2

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// An instant fleet with MinTargetCapacity is all or nothing on the local
// EC2 as on EC2 (moto alone launches whatever it is asked): with room for
// 4 m5.xlarge, a fleet of 6 with MinTargetCapacity 6 launches nothing and
// every override gets InsufficientInstanceCapacity; a fleet of 4 launches
// 4; then a plain fleet of 1 finds no room either. Through aws-sdk-go-v2
// on the wire.
func TestInstantFleetMinTargetCapacity(t *testing.T) {
	ctx := context.Background()
	srv, cl, err := StartSeeded(ctx, StartOptions{}, SeedOptions{ClusterName: "gang", KubernetesVersions: []string{"1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	inj := NewFaultInjector(nil, nil)
	inj.Capacity = NewInstanceCapacity(map[string]int{"m5.xlarge": 4})
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: inj}
	api := ec2.NewFromConfig(cfg)
	lt, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("gang"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(cl.AMI("AL2023", "x86_64").ID)}})
	if err != nil {
		t.Fatal(err)
	}
	running := func() int {
		out, err := api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range out.Reservations {
			n += len(r.Instances)
		}
		return n
	}
	fleet := func(total, minimum int32) *ec2.CreateFleetOutput {
		in := &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: lt.LaunchTemplate.LaunchTemplateName, Version: aws.String("$Latest")},
				Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
					{InstanceType: "m5.xlarge", SubnetId: aws.String(cl.Subnets[0].ID)},
					{InstanceType: "m5.xlarge", SubnetId: aws.String(cl.Subnets[1].ID)},
				},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(total), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		}
		if minimum > 0 {
			in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{MinTargetCapacity: aws.Int32(minimum), SingleInstanceType: aws.Bool(true), SingleAvailabilityZone: aws.Bool(true)}
		}
		out, err := api.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	launched := func(out *ec2.CreateFleetOutput) int {
		n := 0
		for _, fi := range out.Instances {
			n += len(fi.InstanceIds)
		}
		return n
	}
	iced := func(out *ec2.CreateFleetOutput) bool {
		for _, e := range out.Errors {
			if aws.ToString(e.ErrorCode) != "InsufficientInstanceCapacity" {
				return false
			}
		}
		return len(out.Errors) == 2
	}

	for _, tc := range []struct {
		name          string
		total, min    int32
		wantLaunched  int
		wantErrors    bool
		wantRunning   int
		wantRoomAfter int
	}{
		{name: "six with MinTargetCapacity six: none", total: 6, min: 6, wantErrors: true, wantRunning: 0, wantRoomAfter: 4},
		{name: "four with MinTargetCapacity four: all", total: 4, min: 4, wantLaunched: 4, wantRunning: 4, wantRoomAfter: 0},
		{name: "one more without a minimum: none left", total: 1, wantErrors: true, wantRunning: 4, wantRoomAfter: 0},
	} {
		out := fleet(tc.total, tc.min)
		if got := launched(out); got != tc.wantLaunched {
			t.Errorf("%s: %d instances launched, want %d", tc.name, got, tc.wantLaunched)
		}
		if tc.wantErrors && !iced(out) {
			t.Errorf("%s: errors %+v, want InsufficientInstanceCapacity for both overrides", tc.name, out.Errors)
		}
		if got := running(); got != tc.wantRunning {
			t.Errorf("%s: %d instances running, want %d", tc.name, got, tc.wantRunning)
		}
		if got := inj.Capacity.Left("m5.xlarge"); got != tc.wantRoomAfter {
			t.Errorf("%s: room for %d more m5.xlarge, want %d", tc.name, got, tc.wantRoomAfter)
		}
	}
	// Each fleet is one decision, as asked and as answered.
	want := []FleetDecision{{Total: 6, Min: 6}, {Total: 4, Min: 4, InstanceType: "m5.xlarge", Launched: 4}, {Total: 1}}
	if got := inj.Capacity.Decisions(); !slices.Equal(got, want) {
		t.Errorf("fleet decisions %+v, want %+v", got, want)
	}
}
