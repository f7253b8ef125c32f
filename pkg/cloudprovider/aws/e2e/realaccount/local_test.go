package realaccount

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
)

// The suite `make e2e-aws` runs against an account passes against a
// seeded local EC2, and leaves no instance, launch template or instance
// profile behind.
func TestSuiteAgainstLocalEC2(t *testing.T) {
	ctx := context.Background()
	const cluster = "e2e-local"
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{}, localec2.SeedOptions{ClusterName: cluster, KubernetesVersions: []string{"1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	cfg := srv.Config()
	t.Run("suite", func(t *testing.T) {
		Run(t, cfg, Settings{ClusterName: cluster, NodeRole: cl.RoleName, KubernetesVersion: "1.36", SSMParameterRoot: cl.ParameterRoot})
	})

	e := ec2.NewFromConfig(cfg)
	insts, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{cluster}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range insts.Reservations {
		for _, i := range r.Instances {
			n++
			if i.State == nil || i.State.Name != ec2types.InstanceStateNameTerminated {
				t.Errorf("instance %s is %v after the suite, want terminated", aws.ToString(i.InstanceId), i.State)
			}
		}
	}
	if n != 1 {
		t.Errorf("the suite launched %d instances, want exactly 1", n)
	}
	lts, err := e.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{cluster}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lts.LaunchTemplates) != 0 {
		t.Errorf("launch templates left after the suite: %d, want 0", len(lts.LaunchTemplates))
	}
	profiles, err := iam.NewFromConfig(cfg).ListInstanceProfilesForRole(ctx, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String(cl.RoleName)})
	if err != nil {
		t.Fatal(err)
	}
	if len(profiles.InstanceProfiles) != 0 {
		t.Errorf("instance profiles of %s left after the suite: %d, want 0", cl.RoleName, len(profiles.InstanceProfiles))
	}
}
