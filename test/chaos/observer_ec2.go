package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Tags Karpenter's AWS provider (and so joiner's) puts on every instance
// it launches, plus joiner's documented cluster id: the observer reads EC2
// with aws-sdk-go-v2 directly, as any inventory tool would.
const (
	ec2TagCluster   = "eks:eks-cluster-name"
	ec2TagClusterID = "joiner.dev/cluster-id"
)

// EC2Cloud reads the instances of the EC2 endpoint cfg reaches with
// DescribeInstances (terminated ones included, as EC2 lists them for an
// hour after).
func EC2Cloud(cfg aws.Config) Cloud {
	client := ec2.NewFromConfig(cfg)
	return Cloud{
		Name: "aws",
		Instances: func(ctx context.Context) (map[string]CloudInstance, error) {
			out := map[string]CloudInstance{}
			pages := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{})
			for pages.HasMorePages() {
				page, err := pages.NextPage(ctx)
				if err != nil {
					return nil, fmt.Errorf("describing EC2 instances: %w", err)
				}
				for _, r := range page.Reservations {
					for _, inst := range r.Instances {
						ci := CloudInstance{ID: aws.ToString(inst.InstanceId), Tags: map[string]string{}, LaunchTime: aws.ToTime(inst.LaunchTime)}
						if inst.State != nil {
							ci.State = string(inst.State.Name)
						}
						if inst.Placement != nil {
							ci.Zone = aws.ToString(inst.Placement.AvailabilityZone)
						}
						for _, t := range inst.Tags {
							ci.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
						}
						out[ci.ID] = ci
					}
				}
			}
			return out, nil
		},
		ClusterTag: ec2TagCluster, ClusterIDTag: ec2TagClusterID, NodeClaimTag: tagNodeClaim,
		GoneStates:  []string{"shutting-down", "terminated"},
		SampleEvery: time.Second,
	}
}
