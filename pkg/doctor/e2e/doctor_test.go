package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/doctor"
	"github.com/joiner-dev/joiner/pkg/test"
)

const (
	clusterName       = "doctor-e2e"
	kubernetesVersion = "1.36"
)

var local struct {
	server  *localec2.Server
	cluster *localec2.Cluster
}

// The end-to-end test runs doctor against the real local control plane and
// a local EC2 (moto_server) seeded like an EKS user's account.
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{}, localec2.SeedOptions{ClusterName: clusterName, KubernetesVersions: []string{kubernetesVersion}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	local.server, local.cluster = srv, cl
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	return test.Run(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: s})
}

// TestDoctorFindsEachSeededProblem seeds every problem doctor looks for into
// one cluster and account, runs it as `joiner doctor --cloud-provider=aws`
// does, and asserts each problem's line; then fixes the node role mapping
// and asserts that line goes away.
func TestDoctorFindsEachSeededProblem(t *testing.T) {
	ctx := t.Context()
	env := test.Env(t)
	ns := env.Namespace(t)
	cfg := local.server.Config()
	// Through the local EC2's front, which serves EKS access entries
	// (moto has none), as `joiner run --local-ec2` hands it out.
	cfg.HTTPClient = &http.Client{Transport: localec2.NewFront(nil, localec2.FrontOptions{})}
	e := ec2.NewFromConfig(cfg)
	clusterID, err := identity.ClusterID(ctx, env.Client)
	if err != nil {
		t.Fatal(err)
	}

	// A subnet nearly out of addresses (a /28 has 11), found by the node
	// class's discovery tags.
	sub, err := e.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(local.cluster.VPCID), CidrBlock: aws.String("10.0.200.0/28"),
		AvailabilityZone: aws.String(local.cluster.Subnets[0].Zone),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet,
			Tags: []ec2types.Tag{{Key: aws.String(localec2.TagDiscovery), Value: aws.String(clusterName)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	tiny := aws.ToString(sub.Subnet.SubnetId)

	// The node classes, reconciled by joiner's own node class controller.
	p, err := awsprovider.New(awsprovider.Options{
		EC2: e, IAM: iam.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Client: env.Client, Region: cfg.Region,
		ClusterName: clusterName, ClusterID: clusterID, ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=",
		KubernetesVersion: kubernetesVersion, SSMParameterRoot: localec2.DefaultParameterRoot, UserData: awsprovider.GenerateUserData,
	})
	if err != nil {
		t.Fatal(err)
	}
	nodeClass := func(name string, mutate func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
		nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, name)}, Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{localec2.TagDiscovery: clusterName}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{ID: local.cluster.AMI("AL2023", "x86_64").ID}},
			AMIFamily:                  aws.String(awsv1.AMIFamilyAL2023),
			Role:                       local.cluster.RoleName,
		}}
		if mutate != nil {
			mutate(nc)
		}
		env.Create(t, nc)
		if _, err := p.NodeClassController().Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatalf("reconciling ec2nodeclass %s: %v", nc.Name, err)
		}
		return nc
	}
	amd64 := nodeClass("amd64", nil)
	// Seed 002: a custom image whose userData passes the taint with '='.
	custom := nodeClass("custom", func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMIFamily = aws.String(awsv1.AMIFamilyCustom)
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: local.cluster.AMI("AL2", "x86_64").ID}}
		nc.Spec.UserData = aws.String("#!/bin/bash\nset -e\n/etc/eks/bootstrap.sh " + clusterName +
			" --kubelet-extra-args='--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n")
	})

	nodePool := func(name string, nc *awsv1.EC2NodeClass, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, name)}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name},
			Requirements: append([]v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}}, reqs...),
		}}}}
		env.Create(t, np)
		return np
	}
	in := func(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	healthy := nodePool("healthy", amd64)
	// Seed 000: Graviton instance types, an amd64 image.
	graviton := nodePool("graviton", amd64, in(corev1.LabelArchStable, "arm64"))
	windows := nodePool("windows", amd64, in(corev1.LabelWindowsBuild, "10.0.17763"))
	customPool := nodePool("custom", custom)

	// joiner's own Deployment, free to land on managed nodes.
	labels := map[string]string{"app.kubernetes.io/name": "joiner"}
	env.Create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "joiner", Namespace: ns, Labels: labels}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "joiner", Image: "joiner"}}}},
	}})
	env.Create(t,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ebs", Namespace: ns}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-0123"}}}},
		}},
	)

	// Seed 004: another cluster's instance under this clusterName.
	if _, err := e.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(local.cluster.AMI("AL2023", "x86_64").ID), InstanceType: ec2types.InstanceTypeM5Large,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(local.cluster.Subnets[0].ID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String(awsv1.TagEKSClusterName), Value: aws.String(clusterName)},
			{Key: aws.String(awsprovider.TagClusterID), Value: aws.String("another-clusters-uid")},
			{Key: aws.String(awsv1.TagNodeClaim), Value: aws.String("theirs-abcde")},
		}}}}); err != nil {
		t.Fatal(err)
	}

	// As `joiner doctor --cloud-provider=aws` runs it.
	diagnose := func(account *aws.Config) doctor.Report {
		t.Helper()
		r, err := doctor.Run(ctx, env.Config, doctor.RunOptions{ClusterName: clusterName, AWS: account, SSMParameterRoot: localec2.DefaultParameterRoot})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	report := diagnose(&cfg)
	var lines []string
	for _, f := range report.Findings {
		lines = append(lines, f.String())
	}
	text := strings.Join(lines, "\n")
	t.Logf("doctor:\n%s\nskipped: %v", text, report.Skipped)

	role, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(local.cluster.RoleName)})
	if err != nil {
		t.Fatal(err)
	}
	roleARN := aws.ToString(role.Role.Arn)
	for _, want := range []string{
		"error [controller-placement] deployment/" + ns + "/joiner: its pods may be scheduled onto nodes joiner manages",
		"error [userdata] ec2nodeclass/" + custom.Name + ": for nodepool " + customPool.Name + ", the kubelet would register without taint(s) karpenter.sh/unregistered:NoExecute",
		"bootstrap.sh ignores --kubelet-extra-args=... written with '='; fix: write --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' (a space after the option",
		"error [node-role] ec2nodeclass/" + amd64.Name + ": the node role " + roleARN + " is not mapped: there is no kube-system/aws-auth ConfigMap",
		"(nor an EKS access entry)",
		"error [image-architecture] nodepool/" + graviton.Name + ": it allows only arm64, but ec2nodeclass " + amd64.Name + "'s images are amd64 (",
		"error [cluster-name] cluster/" + clusterName + ": 1 instance(s) (i-",
		"carry eks:eks-cluster-name=" + clusterName + " but cluster identity joiner.dev/cluster-id=another-clusters-uid, not this cluster's " + clusterID,
		"error [nodepool-instance-types] nodepool/" + graviton.Name + ": none of its node class's",
		"error [windows-build] nodepool/" + windows.Name + ": it requires node.kubernetes.io/windows-build in [10.0.17763] but ec2nodeclass " + amd64.Name + " boots AL2023 images, which are not Windows",
		"warning [subnets] subnet/" + tiny + ": only 11 of 11 IP addresses free",
		"warning [pod-requests] pod/" + ns + "/bare: pod bare has no cpu or memory requests",
		"warning [in-tree-volumes] pod/" + ns + "/ebs: pod ebs: volume \"data\" uses the in-tree awsElasticBlockStore plugin",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor's report lacks %q", want)
		}
	}
	if strings.Contains(text, "could not be read") {
		t.Errorf("the front serves EKS access entries, but doctor could not read them:\n%s", text)
	}
	if strings.Contains(text, "nodepool/"+healthy.Name) {
		t.Errorf("a healthy nodepool was reported:\n%s", text)
	}
	if report.Errors() == 0 {
		t.Error("no errors counted")
	}

	// Map the node role: its line goes away.
	if err := bootstrap.MapNodeRole(ctx, env.Client, roleARN); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: bootstrap.AWSAuthNamespace, Name: bootstrap.AWSAuthName}})
	})
	for _, f := range diagnose(&cfg).Findings {
		if f.Check == "node-role" {
			t.Errorf("node role still reported after mapping it: %s", f)
		}
	}

	// Without an account the cluster's own checks still run; the
	// account's are listed as skipped.
	clusterOnly := diagnose(nil)
	checks := map[string]bool{}
	for _, f := range clusterOnly.Findings {
		checks[f.Check] = true
	}
	for _, c := range []string{"controller-placement", "userdata", "image-architecture", "windows-build", "pod-requests", "in-tree-volumes"} {
		if !checks[c] {
			t.Errorf("without an account, check %s found nothing", c)
		}
	}
	for _, c := range []string{"node-role", "cluster-name", "subnets", "nodepool-instance-types"} {
		if checks[c] {
			t.Errorf("without an account, check %s ran", c)
		}
		if !strings.Contains(strings.Join(clusterOnly.Skipped, "\n"), c+": no AWS account configured") {
			t.Errorf("skipped %q does not list %s", clusterOnly.Skipped, c)
		}
	}
}
