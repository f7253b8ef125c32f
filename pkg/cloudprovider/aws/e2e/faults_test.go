package e2e

import (
	"context"

	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// unavailable lists the unavailable offerings of the given types as
// type/zone/capacity-type.
func unavailable(t *testing.T, p *awsprovider.Provider, nc *awsv1.EC2NodeClass, types ...string) []string {
	t.Helper()
	its, err := p.GetInstanceTypes(context.Background(), nodePool(nc))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range its {
		for _, o := range it.Offerings {
			if !o.Available && (len(types) == 0 || contains(types, it.Name)) {
				out = append(out, fmt.Sprintf("%s/%s/%s", it.Name, o.Zone, o.CapacityType))
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// InsufficientInstanceCapacity in a CreateFleet answer is an
// InsufficientCapacityError naming the offerings, which then stay
// unavailable: the next launch does not call CreateFleet for them.
func TestInsufficientCapacityMarksOfferings(t *testing.T) {
	t.Cleanup(local.faults.clear)
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	claim := nodeClaim(t, nc)
	claim.Spec.Requirements[0].Values = []string{"m5.large"}
	local.faults.inject("CreateFleet", localec2.FaultCapacity)
	_, err := p.Create(ctx, claim)
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "m5.large/us-east-1") {
		t.Fatalf("Create with no capacity = %v, want an InsufficientCapacityError naming m5.large's offerings", err)
	}
	if got := unavailable(t, p, nc, "m5.large"); len(got) != 3 {
		t.Errorf("unavailable m5.large offerings = %v, want on-demand in the 3 zones", got)
	}
	local.calls.reset()
	if _, err := p.Create(ctx, claim); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("second Create = %v, want InsufficientCapacityError from the ICE cache", err)
	}
	if n := local.calls.reset()["EC2:CreateFleet"]; n != 0 {
		t.Errorf("second Create called CreateFleet %d times, want 0", n)
	}
	// Another type is still launched.
	claim.Spec.Requirements[0].Values = []string{"m5.large", "m5.xlarge"}
	if got, err := p.Create(ctx, claim); err != nil || got.Labels[v1.LabelInstanceType] != "m5.xlarge" {
		t.Errorf("Create allowing m5.xlarge = %v, %v; want an m5.xlarge", got, err)
	}
}

// InsufficientFreeAddressesInSubnet marks the subnets, not the offerings,
// and the NodeClaim's error names each subnet and its free addresses
// (seed 003), also on the next launch, which CreateFleet is spared.
func TestSubnetExhaustionIsNamed(t *testing.T) {
	t.Cleanup(local.faults.clear)
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	claim := nodeClaim(t, nc)
	local.faults.inject("CreateFleet", localec2.FaultSubnetExhausted)
	for i := range 2 {
		local.calls.reset()
		_, err := p.Create(ctx, claim)
		ce := cloudprovider.AsCreateError(err)
		if ce == nil || ce.ConditionReason != "InsufficientFreeAddressesInSubnet" {
			t.Fatalf("Create %d into exhausted subnets = %v, want a CreateError InsufficientFreeAddressesInSubnet", i, err)
		}
		for _, s := range nc.Status.Subnets {
			out, err := ec2.NewFromConfig(local.server.Config()).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{s.ID}})
			if err != nil {
				t.Fatal(err)
			}
			free := aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
			if want := fmt.Sprintf("subnet %s (%s) has %d free addresses", s.ID, s.Zone, free); !strings.Contains(ce.ConditionMessage, want) {
				t.Errorf("Create %d: message %q lacks %q", i, ce.ConditionMessage, want)
			}
		}
		if cloudprovider.IsInsufficientCapacityError(err) {
			t.Errorf("subnet exhaustion reported as insufficient capacity: %v", err)
		}
		if n := local.calls.reset()["EC2:CreateFleet"]; i == 1 && n != 0 {
			t.Errorf("second Create called CreateFleet %d times, want 0", n)
		}
	}
	if got := unavailable(t, p, nc, "m5.large"); len(got) != 6 {
		t.Errorf("unavailable m5.large offerings = %v, want both capacity types in every zone (their subnets are exhausted)", got)
	}
	// The offerings say why, so a pod that fits nowhere is told the subnets
	// are full rather than only "no available offering".
	its, err := p.GetInstanceTypes(ctx, nodePool(nc))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if it.Name == "m5.large" && o.Unavailable != scheduling.UnavailableSubnetExhausted {
				t.Errorf("m5.large offering %s/%s unavailable for %q, want %q", o.Zone, o.CapacityType, o.Unavailable, scheduling.UnavailableSubnetExhausted)
			}
		}
	}
}

// Throttling and server errors are retried by the SDK; a launch that
// stays throttled is a CreateError naming RequestLimitExceeded.
func TestThrottlingAndServerErrorsAreRetried(t *testing.T) {
	t.Cleanup(local.faults.clear)
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	if _, err := p.GetInstanceTypes(ctx, nodePool(nc)); err != nil {
		t.Fatal(err)
	}
	local.faults.clear()
	local.faults.inject("CreateFleet", localec2.FaultThrottle, localec2.FaultServerError)
	if _, err := p.Create(ctx, nodeClaim(t, nc)); err != nil {
		t.Fatalf("Create after a throttle and a 500 = %v, want the third attempt to launch", err)
	}
	if n := local.faults.injected("CreateFleet"); n != 2 {
		t.Errorf("injected %d CreateFleet faults, want 2", n)
	}
	local.faults.inject("CreateFleet", localec2.FaultThrottle, localec2.FaultThrottle, localec2.FaultThrottle)
	_, err := p.Create(ctx, nodeClaim(t, nc))
	if ce := cloudprovider.AsCreateError(err); ce == nil || ce.ConditionReason != "RequestLimitExceeded" {
		t.Errorf("Create throttled on every attempt = %v, want a CreateError RequestLimitExceeded", err)
	}
	local.faults.inject("DescribeSubnets", localec2.FaultServerError, localec2.FaultThrottle)
	other := nodeClass(t, func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "retry"} })
	if got := createAndReconcile(t, p, other); !got.IsReady() {
		t.Errorf("node class after a 500 and a throttle on DescribeSubnets is not Ready: %+v", got.Status.Conditions)
	}
}

// A launch whose CreateTags fails on every attempt is an error, and the
// retry for the same NodeClaim gets the instance already launched, now
// tagged, instead of launching a second one.
func TestFailedTaggingDoesNotLaunchTwice(t *testing.T) {
	t.Cleanup(local.faults.clear)
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	claim := nodeClaim(t, nc)
	if _, err := p.GetInstanceTypes(ctx, nodePool(nc)); err != nil {
		t.Fatal(err)
	}
	local.faults.inject("CreateTags", localec2.FaultThrottle, localec2.FaultThrottle, localec2.FaultThrottle)
	if _, err := p.Create(ctx, claim); err == nil {
		t.Fatal("Create whose CreateTags is throttled on every attempt succeeded, want an error")
	}
	local.calls.reset()
	got, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	if n := local.calls.reset()["EC2:CreateFleet"]; n != 0 {
		t.Errorf("the retry called CreateFleet %d times, want 0 (the first launch's instance)", n)
	}
	if tags := tagsOf(describeInstance(t, got.Status.ProviderID).Tags); tags[awsv1.TagNodeClaim] != claim.Name || tags[awsprovider.TagNodeClaimUID] != string(claim.UID) {
		t.Errorf("instance tags after the retry = %v, want the NodeClaim's name and UID", tags)
	}
}
