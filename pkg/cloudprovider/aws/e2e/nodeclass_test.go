package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/test"
)

// The getting-started EC2NodeClass resolves to the seeded subnets, security
// group and images, and a managed instance profile holding the role.
func TestNodeClassResolves(t *testing.T) {
	p := newProvider(t, "cluster-a")
	local.calls.reset()
	nc := readyNodeClass(t, p, nodeClass(t))
	first := local.calls.reset()

	if len(nc.Status.Subnets) != 3 {
		t.Errorf("status.subnets = %+v, want the 3 seeded subnets", nc.Status.Subnets)
	}
	zones := map[string]bool{}
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = true
		if s.ZoneID == "" {
			t.Errorf("subnet %s has no zone id", s.ID)
		}
	}
	if len(zones) != 3 {
		t.Errorf("subnets span zones %v, want 3", zones)
	}
	if len(nc.Status.SecurityGroups) != 1 || nc.Status.SecurityGroups[0].ID != local.cluster.SecurityGroupID {
		t.Errorf("status.securityGroups = %+v, want %s", nc.Status.SecurityGroups, local.cluster.SecurityGroupID)
	}
	// One image per architecture and variant, with the requirements that
	// say which instance types boot it (Karpenter's status.amis).
	variant := func(a awsv1.AMI) string {
		for _, r := range a.Requirements[1:] {
			switch {
			case r.Key == v1.LabelAWSInstanceGPUCount && r.Operator == corev1.NodeSelectorOpExists:
				return "nvidia"
			case r.Key == v1.LabelAWSInstanceAcceleratorCount && r.Operator == corev1.NodeSelectorOpExists:
				return "neuron"
			}
		}
		if len(a.Requirements) == 3 {
			return "standard"
		}
		return "?"
	}
	want := map[string]string{
		"amd64/standard": local.cluster.AMI("AL2023", "x86_64").ID, "arm64/standard": local.cluster.AMI("AL2023", "arm64").ID,
		"amd64/nvidia": local.cluster.AMIVariant("AL2023", "x86_64", "nvidia").ID, "arm64/nvidia": local.cluster.AMIVariant("AL2023", "arm64", "nvidia").ID,
		"amd64/neuron": local.cluster.AMIVariant("AL2023", "x86_64", "neuron").ID,
	}
	got := map[string]string{}
	for _, ami := range nc.Status.AMIs {
		got[ami.Requirements[0].Values[0]+"/"+variant(ami)] = ami.ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("status.amis by architecture/variant = %v, want %v (%+v)", got, want, nc.Status.AMIs)
	}
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] != nc.Hash() {
		t.Errorf("hash annotation = %q, want %q", nc.Annotations[awsv1.AnnotationEC2NodeClassHash], nc.Hash())
	}
	out, err := iam.NewFromConfig(awsConfig()).GetInstanceProfile(context.Background(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(nc.Status.InstanceProfile)})
	if err != nil {
		t.Fatalf("status.instanceProfile %q: %v", nc.Status.InstanceProfile, err)
	}
	prof := out.InstanceProfile
	if len(prof.Roles) != 1 || aws.ToString(prof.Roles[0].RoleName) != local.cluster.RoleName {
		t.Errorf("instance profile roles = %+v, want %s", prof.Roles, local.cluster.RoleName)
	}
	if path := aws.ToString(prof.Path); !strings.HasPrefix(path, "/karpenter/us-east-1/"+clusterName+"/") {
		t.Errorf("instance profile path = %s, want it under /karpenter/us-east-1/%s/", path, clusterName)
	}
	tags := map[string]string{}
	for _, tg := range prof.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags[awsv1.TagEKSClusterName] != clusterName || tags["team"] != "e2e" || tags["joiner.dev/cluster-id"] != "cluster-a" {
		t.Errorf("instance profile tags = %v, want the cluster's and the node class's", tags)
	}

	// A reconcile of the unchanged node class within the cache lifetimes
	// calls nothing.
	local.calls.reset()
	reconcileNodeClass(t, p, nc.Name)
	again := local.calls.reset()
	t.Logf("AWS calls: first reconcile %d (%s); reconcile of the unchanged node class %d (%s)",
		total(first, "EC2")+total(first, "IAM")+total(first, "SSM"), describe(first), len(again), describe(again))
	if n := total(again, "EC2") + total(again, "IAM") + total(again, "SSM"); n != 0 {
		t.Errorf("reconciling an unchanged node class made %d AWS calls (%s), want 0 (cached)", n, describe(again))
	}
}

// Bad input is a False condition naming the field and the fix.
func TestNodeClassBadInput(t *testing.T) {
	p := newProvider(t, "cluster-a")
	for _, tc := range []struct {
		name      string
		mutate    func(*awsv1.EC2NodeClass)
		condition string
		reason    string
		message   string
	}{
		{
			name: "subnet terms match nothing",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: "no-such-cluster"}}}
			},
			condition: awsv1.ConditionTypeSubnetsReady, reason: "SubnetsNotFound", message: "spec.subnetSelectorTerms did not match any subnet",
		},
		{
			name: "security group terms match nothing",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "no-such-group"}}
			},
			condition: awsv1.ConditionTypeSecurityGroupsReady, reason: "SecurityGroupsNotFound", message: "spec.securityGroupSelectorTerms did not match any security group",
		},
		{
			name:      "unknown role",
			mutate:    func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "NoSuchRole" },
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: "RoleNotFound", message: `spec.role: role "NoSuchRole" does not exist in IAM`,
		},
		{
			name: "unknown instance profile",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Role = ""
				nc.Spec.InstanceProfile = aws.String("no-such-profile")
			},
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: "InstanceProfileNotFound", message: `spec.instanceProfile: instance profile "no-such-profile" does not exist`,
		},
		{
			name: "alias version without images",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v19990101"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: "AMINotFound", message: "no SSM parameter under /joiner-local/service names an image for alias al2023@v19990101",
		},
		{
			name: "AMI name matches nothing",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "no-such-image-*"}}
				nc.Spec.AMIFamily = aws.String("AL2023")
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: "AMINotFound", message: "spec.amiSelectorTerms did not match any available image",
		},
		{
			name: "malformed userData",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				nc.Spec.UserData = aws.String("[settings.kubernetes\nnot toml = = =")
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: "InvalidUserData", message: "spec.userData",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := nodeClass(t, tc.mutate)
			check := func(nc *awsv1.EC2NodeClass) {
				c := meta.FindStatusCondition(nc.Status.Conditions, tc.condition)
				if c == nil || c.Status != "False" || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
					t.Errorf("%s = %+v, want False/%s containing %q", tc.condition, c, tc.reason, tc.message)
				}
				if nc.IsReady() {
					t.Error("node class is Ready")
				}
			}
			check(createAndReconcile(t, p, nc))
		})
	}
	// An alias of an unknown family never reaches the reconciler through
	// the API server (its schema rejects it); the resolver names it too.
	nc := nodeClass(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "ubuntu@latest"}}
	})
	if err := p.ResolveStatus(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeAMIsReady)
	if c == nil || c.Status != "False" || !strings.Contains(c.Message, `spec.amiSelectorTerms[0].alias: alias "ubuntu@latest": unknown family "ubuntu"`) {
		t.Errorf("AMIsReady for alias ubuntu@latest = %+v, want False naming the alias and the known families", c)
	}
}

func createAndReconcile(t testing.TB, p *awsprovider.Provider, nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	t.Helper()
	test.Env(t).Create(t, nc)
	return reconcileNodeClass(t, p, nc.Name)
}

// Deleting an EC2NodeClass deletes its launch templates and its managed
// instance profile, then lets it go.
func TestNodeClassDeletionCleansUp(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	if _, err := p.Create(ctx, nodeClaim(t, nc)); err != nil {
		t.Fatal(err)
	}
	e := ec2.NewFromConfig(local.server.Config())
	templates := func() int {
		out, err := e.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + v1.LabelAWSEC2NodeClass), Values: []string{nc.Name}}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.LaunchTemplates)
	}
	if templates() == 0 {
		t.Fatal("the launch created no launch template")
	}
	if err := test.Env(t).Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := p.NodeClassController().Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	if n := templates(); n != 0 {
		t.Errorf("%d launch templates left after the node class was deleted", n)
	}
	if _, err := iam.NewFromConfig(local.server.Config()).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(nc.Status.InstanceProfile)}); err == nil {
		t.Errorf("instance profile %s still exists", nc.Status.InstanceProfile)
	}
	if err := test.Env(t).Client.Get(ctx, client.ObjectKeyFromObject(nc), &awsv1.EC2NodeClass{}); !apierrors.IsNotFound(err) {
		t.Errorf("node class after finalization: %v, want gone", err)
	}
}
