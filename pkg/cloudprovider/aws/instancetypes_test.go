package aws

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"
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
