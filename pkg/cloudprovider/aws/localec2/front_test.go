package localec2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// TestFront checks, through aws-sdk-go-v2 on the wire against moto, that
// the local EC2's front answers as EC2 does where moto does not: subnets
// run out of addresses, launch templates page, the architecture filter
// matches by membership, and spot prices come from the on-demand snapshot.
func TestFront(t *testing.T) {
	ctx := context.Background()
	srv, cl, err := StartSeeded(ctx, StartOptions{}, SeedOptions{ClusterName: "front", KubernetesVersions: []string{"1.36"}, SubnetPrefixLength: 28})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	onDemand := map[string]float64{"m5.large": 0.096, "c1.xlarge": 0.52, "t2.nano": 0.0058}
	cfg := srv.Config()
	cfg.HTTPClient = &http.Client{Transport: NewFront(NewFaultInjector(nil, nil), FrontOptions{OnDemandPrices: onDemand})}
	api := ec2.NewFromConfig(cfg)

	t.Run("subnet free addresses", func(t *testing.T) { frontSubnets(ctx, t, api, cl) })
	t.Run("launch template pages", func(t *testing.T) { frontLaunchTemplates(ctx, t, api, cl) })
	t.Run("architecture filter", func(t *testing.T) { frontArchitectures(ctx, t, api) })
	t.Run("spot prices", func(t *testing.T) { frontSpotPrices(ctx, t, api, onDemand) })
}

// frontSubnets: a /28 subnet has 11 free addresses; they fall as instances
// launch; a fleet asking for more than are left launches what fits and
// reports the subnet InsufficientFreeAddressesInSubnet; a full subnet's
// overrides are not tried (the other subnet's launch); a fleet or a
// RunInstances into only the full subnet launches nothing, with EC2's
// error.
func frontSubnets(ctx context.Context, t *testing.T, api *ec2.Client, cl *Cluster) {
	lt, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("subnets"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(cl.AMI("AL2023", "x86_64").ID)}})
	if err != nil {
		t.Fatal(err)
	}
	full, other := cl.Subnets[0].ID, cl.Subnets[1].ID
	free := func(id string) int32 {
		out, err := api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
	}
	fleet := func(total int32, subnets ...string) *ec2.CreateFleetOutput {
		var overrides []ec2types.FleetLaunchTemplateOverridesRequest
		for _, s := range subnets {
			overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: "m5.large", SubnetId: aws.String(s)})
		}
		out, err := api.CreateFleet(ctx, &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: lt.LaunchTemplate.LaunchTemplateName, Version: aws.String("$Latest")},
				Overrides:                   overrides,
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(total), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	launched := func(out *ec2.CreateFleetOutput) (n int, subnets []string) {
		for _, fi := range out.Instances {
			n += len(fi.InstanceIds)
			if fi.LaunchTemplateAndOverrides != nil && fi.LaunchTemplateAndOverrides.Overrides != nil {
				subnets = append(subnets, aws.ToString(fi.LaunchTemplateAndOverrides.Overrides.SubnetId))
			}
		}
		return n, subnets
	}
	fullErrors := func(out *ec2.CreateFleetOutput, subnet string) bool {
		for _, e := range out.Errors {
			if aws.ToString(e.ErrorCode) == codeSubnetFull && e.LaunchTemplateAndOverrides != nil && aws.ToString(e.LaunchTemplateAndOverrides.Overrides.SubnetId) == subnet {
				return true
			}
		}
		return false
	}

	if got := free(full); got != 11 {
		t.Fatalf("a /28 subnet has %d free addresses, want 11", got)
	}
	if n, _ := launched(fleet(4, full)); n != 4 {
		t.Fatalf("launched %d of 4", n)
	}
	if got := free(full); got != 7 {
		t.Errorf("after 4 launches the subnet has %d free addresses, want 7", got)
	}
	out := fleet(9, full)
	if n, _ := launched(out); n != 7 || !fullErrors(out, full) {
		t.Errorf("a fleet of 9 into 7 free addresses launched %d (want 7) with errors %+v (want %s for %s)", n, out.Errors, codeSubnetFull, full)
	}
	if got := free(full); got != 0 {
		t.Errorf("the subnet has %d free addresses, want 0", got)
	}
	out = fleet(1, full, other)
	if n, where := launched(out); n != 1 || !slices.Equal(where, []string{other}) || !fullErrors(out, full) {
		t.Errorf("a fleet over a full and a free subnet launched %d in %v with errors %+v, want 1 in %s and %s for %s", n, where, out.Errors, other, codeSubnetFull, full)
	}
	out = fleet(1, full)
	if n, _ := launched(out); n != 0 || !fullErrors(out, full) || len(out.Errors) != 1 {
		t.Errorf("a fleet into only the full subnet launched %d with errors %+v, want none and %s", n, out.Errors, codeSubnetFull)
	}
	_, err = api.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(cl.AMI("AL2023", "x86_64").ID), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(full), InstanceType: "m5.large"})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != codeSubnetFull {
		t.Errorf("RunInstances into the full subnet: %v, want %s", err, codeSubnetFull)
	}
}

// frontLaunchTemplates: 40 launch templates page through MaxResults and
// NextToken (moto alone returns its first 15 and no token), and without
// MaxResults all of them come at once.
func frontLaunchTemplates(ctx context.Context, t *testing.T, api *ec2.Client, cl *Cluster) {
	before, err := api.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, lt := range before.LaunchTemplates {
		want[aws.ToString(lt.LaunchTemplateName)] = true
	}
	for i := range 40 {
		name := fmt.Sprintf("page-%02d", i)
		if _, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(cl.AMI("AL2023", "x86_64").ID)}}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	got := map[string]bool{}
	pages := 0
	p := ec2.NewDescribeLaunchTemplatesPaginator(api, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(10)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.LaunchTemplates) > 10 {
			t.Errorf("page %d holds %d templates, more than MaxResults 10", pages, len(page.LaunchTemplates))
		}
		for _, lt := range page.LaunchTemplates {
			got[aws.ToString(lt.LaunchTemplateName)] = true
		}
	}
	if len(got) != len(want) || pages != (len(want)+9)/10 {
		t.Errorf("paged %d of %d templates in %d pages, want all in %d", len(got), len(want), pages, (len(want)+9)/10)
	}
	all, err := api.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.LaunchTemplates) != len(want) || all.NextToken != nil {
		t.Errorf("without MaxResults: %d templates (next token %v), want all %d", len(all.LaunchTemplates), all.NextToken, len(want))
	}
	if _, err := api.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{MaxResults: aws.Int32(201)}); err == nil {
		t.Errorf("MaxResults 201 was accepted; EC2 takes 1 to 200")
	}
}

// frontArchitectures: the supported-architecture filter matches a type
// when any of its architectures is asked for, so x86_64 finds t2.nano to
// t2.medium (i386 and x86_64), and arm64 alone does not.
func frontArchitectures(ctx context.Context, t *testing.T, api *ec2.Client) {
	types := func(archs ...string) map[string]bool {
		out := map[string]bool{}
		p := ec2.NewDescribeInstanceTypesPaginator(api, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
			{Name: aws.String("processor-info.supported-architecture"), Values: archs},
			{Name: aws.String("instance-type"), Values: []string{"t2.*", "m6g.large"}},
		}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range page.InstanceTypes {
				out[string(it.InstanceType)] = true
			}
		}
		return out
	}
	both := types("x86_64", "arm64")
	for _, it := range []string{"t2.nano", "t2.micro", "t2.small", "t2.medium", "t2.large", "m6g.large"} {
		if !both[it] {
			t.Errorf("x86_64 or arm64 does not find %s (found %v)", it, both)
		}
	}
	arm := types("arm64")
	if arm["t2.nano"] || !arm["m6g.large"] {
		t.Errorf("arm64 alone found %v, want m6g.large and no t2", arm)
	}
}

// frontSpotPrices: every spot price is the derived one, below on-demand,
// and types without an on-demand price have no spot price.
func frontSpotPrices(ctx context.Context, t *testing.T, api *ec2.Client, onDemand map[string]float64) {
	price := DerivedSpotPrices(onDemand)
	seen := map[string]int{}
	p := ec2.NewDescribeSpotPriceHistoryPaginator(api, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{"m5.large", "c1.xlarge", "m5.xlarge"},
		ProductDescriptions: []string{"Linux/UNIX"},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range page.SpotPriceHistory {
			it, zone := string(h.InstanceType), aws.ToString(h.AvailabilityZone)
			seen[it]++
			want, ok := price(it, zone)
			if !ok {
				t.Errorf("%s in %s has spot price %s but no on-demand price", it, zone, aws.ToString(h.SpotPrice))
				continue
			}
			if got := aws.ToString(h.SpotPrice); got != fmt.Sprintf("%.6f", want) {
				t.Errorf("%s in %s: spot price %s, want %.6f", it, zone, got, want)
			}
			if want < spotShareMin*onDemand[it] || want > spotShareMax*onDemand[it] {
				t.Errorf("%s in %s: spot price %.6f is not %.0f%%-%.0f%% of on-demand %.4f", it, zone, want, 100*spotShareMin, 100*spotShareMax, onDemand[it])
			}
		}
	}
	if seen["m5.large"] == 0 || seen["c1.xlarge"] == 0 || seen["m5.xlarge"] != 0 {
		t.Errorf("spot prices per type %v, want m5.large and c1.xlarge, not m5.xlarge (no on-demand price)", seen)
	}
}
