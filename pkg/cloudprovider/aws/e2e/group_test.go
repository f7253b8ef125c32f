package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
)

// A gang launches in one instant fleet with MinTargetCapacity: when the
// local EC2 has room for only 4 m5.xlarge, a gang of 6 gets EC2's capacity
// error and leaves no instance; a gang of 4 launches in one CreateFleet,
// and Create for each NodeClaim then returns the instance launched for it
// instead of launching another.
func TestCreateGroupAllOrNothing(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-gang")
	nc := readyNodeClass(t, p, nodeClass(t))
	local.faults.Capacity = localec2.NewInstanceCapacity(map[string]int{"m5.xlarge": 4})
	t.Cleanup(func() { local.faults.Capacity = nil })
	gang := func(name string, n int) []*v1.NodeClaim {
		var out []*v1.NodeClaim
		for i := range n {
			claim := nodeClaim(t, nc)
			claim.Name = fmt.Sprintf("%s-%s-%d", claim.Name, name, i)
			claim.UID = types.UID("uid-" + claim.Name)
			claim.Spec.Requirements[0].Values = []string{"m5.xlarge"}
			out = append(out, claim)
		}
		return out
	}
	launchedFor := func(claims []*v1.NodeClaim) int {
		names := make([]string, len(claims))
		for i, c := range claims {
			names[i] = c.Name
		}
		out, err := ec2.NewFromConfig(local.server.Config()).DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + awsv1.TagNodeClaim), Values: names},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range out.Reservations {
			n += len(r.Instances)
		}
		return n
	}

	six := gang("six", 6)
	err := p.CreateGroup(ctx, six)
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("CreateGroup of 6 with room for 4 = %v, want an insufficient capacity error", err)
	}
	if n := launchedFor(six); n != 0 {
		t.Errorf("%d instances of the gang of 6 running, want none", n)
	}
	if left := local.faults.Capacity.Left("m5.xlarge"); left != 4 {
		t.Errorf("room for %d m5.xlarge after the refused gang, want 4", left)
	}

	four := gang("four", 4)
	if err := p.CreateGroup(ctx, four); err != nil {
		t.Fatalf("CreateGroup of 4 with room for 4: %v", err)
	}
	if n := launchedFor(four); n != 4 {
		t.Fatalf("%d instances of the gang of 4 running, want 4", n)
	}
	ids := map[string]bool{}
	for _, claim := range four {
		got, err := p.Create(ctx, claim)
		if err != nil {
			t.Fatalf("Create for %s after its group launched: %v", claim.Name, err)
		}
		if got.Labels[v1.LabelInstanceType] != "m5.xlarge" || ids[got.Status.ProviderID] {
			t.Errorf("Create for %s = %s (%s), want its own m5.xlarge", claim.Name, got.Status.ProviderID, got.Labels[v1.LabelInstanceType])
		}
		ids[got.Status.ProviderID] = true
	}
	if n := launchedFor(four); n != 4 {
		t.Errorf("%d instances of the gang of 4 after Create, want still 4 (Create must return the group's)", n)
	}
}
