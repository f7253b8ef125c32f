package aws

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// fakeFleets answers CreateFleet with up to capacity instances; the other
// methods of EC2API are not used by the batcher.
type fakeFleets struct {
	EC2API
	mu       sync.Mutex
	capacity int
	requests []int32
}

func (f *fakeFleets) CreateFleet(_ context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)
	f.requests = append(f.requests, want)
	out := &ec2.CreateFleetOutput{}
	var ids []string
	for i := range min(int(want), f.capacity) {
		ids = append(ids, fmt.Sprintf("i-%017d", i))
	}
	out.Instances = []ec2types.CreateFleetInstance{{InstanceIds: ids, InstanceType: "m5.large", Lifecycle: ec2types.InstanceLifecycleOnDemand}}
	if int(want) > f.capacity {
		out.Errors = []ec2types.CreateFleetError{{ErrorCode: aws.String("InsufficientInstanceCapacity")}}
	}
	return out, nil
}

func TestFleetBatcherMergesIdenticalLaunches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		launches  int
		capacity  int
		wantCalls []int32
	}{
		{name: "all fulfilled", launches: 5, capacity: 10, wantCalls: []int32{5}},
		{name: "partly fulfilled", launches: 5, capacity: 3, wantCalls: []int32{5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In a synctest bubble the idle timer only fires once every
			// caller is blocked, so a loaded machine cannot split the batch.
			synctest.Test(t, func(t *testing.T) {
				f := &fakeFleets{capacity: tc.capacity}
				b := newFleetBatcher(f, 200*time.Millisecond, 2*time.Second)
				in := &ec2.CreateFleetInput{Type: ec2types.FleetTypeInstant, TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)}}
				results := make(chan fleetResult, tc.launches)
				var wg sync.WaitGroup
				for range tc.launches {
					wg.Add(1)
					go func() {
						defer wg.Done()
						results <- b.launch(context.Background(), in)
					}()
				}
				wg.Wait()
				close(results)
				got, failed := map[string]bool{}, 0
				for r := range results {
					switch {
					case r.instance != nil:
						if got[r.instance.ID] {
							t.Errorf("instance %s handed out twice", r.instance.ID)
						}
						got[r.instance.ID] = true
					case len(r.errors) > 0:
						failed++
					default:
						t.Errorf("result with neither instance nor error: %+v", r)
					}
				}
				if len(got) != min(tc.launches, tc.capacity) || failed != tc.launches-len(got) {
					t.Errorf("%d launched, %d failed; want %d launched", len(got), failed, min(tc.launches, tc.capacity))
				}
				if fmt.Sprint(f.requests) != fmt.Sprint(tc.wantCalls) {
					t.Errorf("CreateFleet target capacities = %v, want %v (one merged call)", f.requests, tc.wantCalls)
				}
				if tc.launches > 0 && aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) != 1 {
					t.Error("the caller's request was modified")
				}
			})
		})
	}
}

func TestWithoutExotic(t *testing.T) {
	plain := &scheduling.InstanceType{Name: "m5.large", Requirements: map[string][]string{v1.LabelAWSInstanceSize: {"large"}}}
	gpu := &scheduling.InstanceType{Name: "g4dn.xlarge", Requirements: map[string][]string{v1.LabelAWSInstanceGPUCount: {"1"}, v1.LabelAWSInstanceSize: {"xlarge"}}}
	metal := &scheduling.InstanceType{Name: "m5.metal", Requirements: map[string][]string{v1.LabelAWSInstanceSize: {"metal"}}}
	all := []offering.Candidate{{InstanceType: gpu}, {InstanceType: metal}, {InstanceType: plain}}
	names := func(cs []offering.Candidate) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.InstanceType.Name)
		}
		return fmt.Sprint(out)
	}
	for _, tc := range []struct {
		name  string
		cands []offering.Candidate
		claim v1.NodeClaimSpec
		want  string
	}{
		{name: "plain pods avoid GPUs and metal", cands: all, want: "[m5.large]"},
		{name: "a GPU request keeps them", cands: all, claim: v1.NodeClaimSpec{Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}, want: "[g4dn.xlarge m5.metal m5.large]"},
		{name: "a GPU label requirement keeps them", cands: all, claim: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelAWSInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}}, want: "[g4dn.xlarge m5.metal m5.large]"},
		{name: "nothing else fits", cands: all[:2], want: "[g4dn.xlarge m5.metal]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(withoutExotic(tc.cands, &v1.NodeClaim{Spec: tc.claim})); got != tc.want {
				t.Errorf("candidates = %s, want %s", got, tc.want)
			}
		})
	}
}
