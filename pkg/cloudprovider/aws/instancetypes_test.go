package aws

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// fakeCatalog serves one instance type in one zone and counts fetches.
type fakeCatalog struct {
	EC2API
	fetches atomic.Int32
}

func (f *fakeCatalog) DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	f.fetches.Add(1)
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: []ec2types.InstanceTypeInfo{*typeInfo(2, 8192, 3, 10)}}, nil
}

func (f *fakeCatalog) DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	return &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: []ec2types.InstanceTypeOffering{{InstanceType: "m5.large", Location: aws.String("us-east-1a")}}}, nil
}

// A stale catalog is served at once while one background fetch replaces it.
// The test runs in a synctest bubble: synctest.Wait returns once the
// background refresh has finished, without polling real time.
func TestCatalogRefreshesInTheBackground(t *testing.T) {
	synctest.Test(t, testCatalogRefreshesInTheBackground)
}

func testCatalogRefreshesInTheBackground(t *testing.T) {
	f := &fakeCatalog{}
	clk := clocktesting.NewFakeClock(time.Now())
	c := newInstanceTypeCache(f, "us-east-1", clk)
	first, err := c.get(context.Background())
	if err != nil || len(first.types) != 1 || first.zones["m5.large"][0] != "us-east-1a" {
		t.Fatalf("first catalog = %+v, %v", first, err)
	}
	if again, _ := c.get(context.Background()); again != first || f.fetches.Load() != 1 {
		t.Fatalf("a fresh catalog was fetched again (%d fetches)", f.fetches.Load())
	}
	clk.Step(instanceTypesTTL + time.Second)
	if stale, _ := c.get(context.Background()); stale != first {
		t.Error("the stale catalog was not served while refreshing")
	}
	synctest.Wait()
	c.mu.Lock()
	gen, refreshing := c.current.gen, c.refreshing
	c.mu.Unlock()
	if gen != 2 || refreshing {
		t.Fatalf("the background refresh did not install a new catalog (gen %d, refreshing %v, %d fetches)", gen, refreshing, f.fetches.Load())
	}
	if n := f.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// TestVolumesPrice: a node class's EBS volumes are priced per GiB-month by
// volume type, EC2's gp2 when the mapping names none; volumes without a
// size (the image's own) are not counted.
func TestVolumesPrice(t *testing.T) {
	vol := func(gib int32, vt ec2types.VolumeType) ec2types.LaunchTemplateBlockDeviceMappingRequest {
		return ec2types.LaunchTemplateBlockDeviceMappingRequest{Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(gib), VolumeType: vt}}
	}
	for _, tc := range []struct {
		name string
		bdms []ec2types.LaunchTemplateBlockDeviceMappingRequest
		want float64
	}{
		{name: "AL2023 default: 20 GiB gp3", bdms: blockDevices(&awsv1.EC2NodeClass{}, awsv1.AMIFamilyAL2023), want: 20 * 0.08 / 730},
		{name: "Bottlerocket default: 4 + 20 GiB gp3", bdms: blockDevices(&awsv1.EC2NodeClass{}, awsv1.AMIFamilyBottlerocket), want: 24 * 0.08 / 730},
		{name: "no type is gp2", bdms: []ec2types.LaunchTemplateBlockDeviceMappingRequest{vol(100, "")}, want: 100 * 0.10 / 730},
		{name: "io2 and a sizeless mapping", bdms: []ec2types.LaunchTemplateBlockDeviceMappingRequest{vol(50, ec2types.VolumeTypeIo2), {Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{}}}, want: 50 * 0.125 / 730},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := volumesPrice(tc.bdms); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("volumesPrice = %v, want %v", got, tc.want)
			}
		})
	}
}
