package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/test"
)

// nodeClass is the getting-started EC2NodeClass of the seeded cluster.
func nodeClass(t testing.TB, mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       local.cluster.RoleName,
			Tags:                       map[string]string{"team": "e2e"},
		},
	}
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

// readyNodeClass creates nc, reconciles it with p's controller and
// returns it as stored, failing unless it is Ready.
func readyNodeClass(t testing.TB, p *awsprovider.Provider, nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	t.Helper()
	env := test.Env(t)
	env.Create(t, nc)
	got := reconcileNodeClass(t, p, nc.Name)
	if !got.IsReady() {
		t.Fatalf("EC2NodeClass %s is not Ready: %+v", nc.Name, got.Status.Conditions)
	}
	return got
}

func reconcileNodeClass(t testing.TB, p *awsprovider.Provider, name string) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if _, err := p.NodeClassController().Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatalf("reconciling EC2NodeClass %s: %v", name, err)
	}
	got := &awsv1.EC2NodeClass{}
	if err := test.Env(t).Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	return got
}

func ref(nc *awsv1.EC2NodeClass) *v1.NodeClassReference {
	return &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}
}

// nodeClaim asks for one node of nc; its UID is Create's client token.
func nodeClaim(t *testing.T, nc *awsv1.EC2NodeClass, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	name := test.Name(t, "claim")
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: ref(nc),
			Requirements: append([]v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge", "m6g.large"}},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			}, reqs...),
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
}

func nodePool(nc *awsv1.EC2NodeClass) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = ref(nc)
	return np
}

// waitTerminated waits until the local EC2 reports instance id terminated
// (or shutting down).
func waitTerminated(t *testing.T, id string) {
	t.Helper()
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		out, err := ec2.NewFromConfig(local.server.Config()).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return err
		}
		if st := out.Reservations[0].Instances[0].State.Name; st != ec2types.InstanceStateNameTerminated && st != ec2types.InstanceStateNameShuttingDown {
			return fmt.Errorf("instance %s is %s", id, st)
		}
		return nil
	})
}

// launchTemplatesOf is what EC2 stored for node class nodeClass's launch
// templates that boot image (read from the local EC2 itself).
func launchTemplatesOf(t *testing.T, nodeClass, image string) []*ec2types.ResponseLaunchTemplateData {
	t.Helper()
	ctx := t.Context()
	e := ec2.NewFromConfig(local.server.Config())
	lts, err := e.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + v1.LabelAWSEC2NodeClass), Values: []string{nodeClass}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out []*ec2types.ResponseLaunchTemplateData
	for _, lt := range lts.LaunchTemplates {
		ver, err := e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lt.LaunchTemplateId})
		if err != nil {
			t.Fatal(err)
		}
		if data := ver.LaunchTemplateVersions[0].LaunchTemplateData; aws.ToString(data.ImageId) == image {
			out = append(out, data)
		}
	}
	return out
}
