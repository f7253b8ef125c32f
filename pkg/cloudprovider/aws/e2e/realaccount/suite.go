// Package realaccount is the end-to-end suite `make e2e-aws` runs against
// a real AWS account: it resolves an EC2NodeClass, reads instance types,
// offerings and prices, launches ONE small on-demand instance through the
// provider's Create, sees it through Get and List, deletes it and waits
// until EC2 reports it terminated, then deletes the launch templates and
// the instance profile it created.
//
// The body (Run) is an ordinary function so the default `go test` run can
// drive it against a seeded local EC2 (local_test.go) and CI exercises
// exactly the code a user runs against their account; the account entry
// point (realaccount_test.go) is behind the e2eaws build tag.
//
// The EC2NodeClass lives in an in-memory controller-runtime client, not an
// API server: the suite checks what joiner does to the AWS account, and a
// user verifying their account should not need a cluster for it.
package realaccount

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
)

// CandidateTypes are the instance types the suite may launch: the
// cheapest available on-demand one of them is what Create must pick
// (about $0.01 an hour in us-east-1).
var CandidateTypes = []string{"t3.micro", "t3.small", "t4g.micro"}

// DiscoveryTag selects the cluster's subnets and security groups, as in
// Karpenter's getting-started guide.
const DiscoveryTag = "karpenter.sh/discovery"

// Settings are what the suite needs besides an aws.Config.
type Settings struct {
	// ClusterName (CLUSTER_NAME) tags everything launched and selects the
	// subnets and security groups tagged karpenter.sh/discovery=<name>.
	ClusterName string
	// NodeRole (NODE_ROLE, default KarpenterNodeRole-<cluster>) is the IAM
	// role the suite's instance profile is created from.
	NodeRole string
	// KubernetesVersion (KUBERNETES_VERSION, default 1.36) picks the
	// al2023@latest image through the SSM public parameters.
	KubernetesVersion string
	// ClusterEndpoint (CLUSTER_ENDPOINT) goes into the node's userData; the
	// node is terminated before it matters, so a placeholder is fine.
	ClusterEndpoint string
	// SSMParameterRoot (SSM_PARAMETER_ROOT) defaults to /aws/service.
	SSMParameterRoot string
	// Pricing, when set, refreshes on-demand prices from the Pricing API
	// before the instance types are read; nil uses the built-in table.
	Pricing awsprovider.PricingAPI
	// Poll and Timeout pace the wait for termination.
	Poll, Timeout time.Duration
}

// SettingsFromEnv reads the settings from the environment. CLUSTER_NAME is
// required: without it the suite would not know which subnets are its own.
func SettingsFromEnv() (Settings, error) {
	s := Settings{
		ClusterName:       os.Getenv("CLUSTER_NAME"),
		NodeRole:          os.Getenv("NODE_ROLE"),
		KubernetesVersion: os.Getenv("KUBERNETES_VERSION"),
		ClusterEndpoint:   os.Getenv("CLUSTER_ENDPOINT"),
		SSMParameterRoot:  os.Getenv("SSM_PARAMETER_ROOT"),
		Poll:              10 * time.Second,
		Timeout:           10 * time.Minute,
	}
	if s.ClusterName == "" {
		return s, errors.New("CLUSTER_NAME is not set: set it to the cluster whose subnets and security groups carry karpenter.sh/discovery=<cluster> (nothing is launched without it)")
	}
	if s.NodeRole == "" {
		s.NodeRole = "KarpenterNodeRole-" + s.ClusterName
	}
	return s, nil
}

func (s *Settings) defaults() {
	if s.KubernetesVersion == "" {
		s.KubernetesVersion = "1.36"
	}
	if s.ClusterEndpoint == "" {
		s.ClusterEndpoint = "https://joiner-e2e.invalid"
	}
	if s.SSMParameterRoot == "" {
		s.SSMParameterRoot = awsprovider.DefaultSSMParameterRoot
	}
	if s.Poll == 0 {
		s.Poll = time.Second
	}
	if s.Timeout == 0 {
		s.Timeout = 10 * time.Minute
	}
}

// Run is the suite against the account cfg points at.
func Run(t *testing.T, cfg aws.Config, s Settings) {
	ctx := context.Background()
	s.defaults()
	if s.ClusterName == "" {
		t.Fatal("no cluster name: refusing to launch anything")
	}
	if cfg.Region == "" {
		t.Fatal("no region: set AWS_REGION or a region in your AWS profile")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&awsv1.EC2NodeClass{}).Build()
	ec2c := ec2.NewFromConfig(cfg)
	// A run id of its own, so List proves the cluster-identity filter and
	// a second run (or a real joiner on this cluster) is never touched.
	runID := "e2e-" + rand.String(8)
	p, err := awsprovider.New(awsprovider.Options{
		EC2: ec2c, IAM: iam.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Pricing: s.Pricing,
		Client: kube, Region: cfg.Region,
		ClusterName: s.ClusterName, ClusterID: runID,
		ClusterEndpoint: s.ClusterEndpoint, CABundle: "Y2E=",
		KubernetesVersion:       s.KubernetesVersion,
		SSMParameterRoot:        s.SSMParameterRoot,
		VMMemoryOverheadPercent: awsprovider.DefaultVMMemoryOverheadPercent,
		UserData:                awsprovider.GenerateUserData,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Pricing != nil {
		refreshPrices(ctx, t, p)
	}

	// 1. The EC2NodeClass, resolved by the provider's reconciler.
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: runID},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{DiscoveryTag: s.ClusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{DiscoveryTag: s.ClusterName}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       s.NodeRole,
			Tags:                       map[string]string{"joiner.dev/e2e": runID},
		},
	}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nodeClasses := p.NodeClassController()
	key := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	// Registered first, so it runs last: the instance is gone by then.
	t.Cleanup(func() { deleteNodeClass(t, kube, nodeClasses, key) })
	if _, err := nodeClasses.Reconcile(ctx, key); err != nil {
		t.Fatalf("reconciling EC2NodeClass: %v", err)
	}
	if err := kube.Get(ctx, key.NamespacedName, nc); err != nil {
		t.Fatal(err)
	}
	if !nc.IsReady() {
		t.Fatalf("EC2NodeClass is not Ready: %+v", nc.Status.Conditions)
	}
	if len(nc.Status.Subnets) == 0 || len(nc.Status.SecurityGroups) == 0 || len(nc.Status.AMIs) == 0 || nc.Status.InstanceProfile == "" {
		t.Fatalf("resolved status = %+v, want subnets, security groups, AMIs and an instance profile", nc.Status)
	}
	t.Logf("EC2NodeClass %s: %d subnets, %d security groups, %d AMIs, instance profile %s", nc.Name, len(nc.Status.Subnets), len(nc.Status.SecurityGroups), len(nc.Status.AMIs), nc.Status.InstanceProfile)

	// 2. Instance types, offerings and prices; the cheapest candidate.
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}
	its, err := p.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	cheapest, cheapestPrice := "", math.Inf(1)
	for _, it := range its {
		if !contains(CandidateTypes, it.Name) {
			continue
		}
		if it.Capacity.Cpu().IsZero() || it.Capacity.Memory().IsZero() {
			t.Errorf("instance type %s has capacity %v, want cpu and memory", it.Name, it.Capacity)
		}
		for _, o := range it.Offerings {
			if !o.Available || o.CapacityType != v1.CapacityTypeOnDemand {
				continue
			}
			if o.Price <= 0 {
				t.Errorf("on-demand offering %s %s has price %v, want a price", it.Name, o.Zone, o.Price)
			}
			if o.Price < cheapestPrice {
				cheapest, cheapestPrice = it.Name, o.Price
			}
		}
	}
	if cheapest == "" {
		t.Fatalf("none of %v has an available on-demand offering in the node class's zones (%d instance types read)", CandidateTypes, len(its))
	}
	t.Logf("%d instance types; cheapest candidate %s at $%.4f/h on-demand", len(its), cheapest, cheapestPrice)

	// 3. ONE on-demand NodeClaim through Create.
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: runID, UID: types.UID(runID + "-uid"), Labels: map[string]string{v1.LabelNodePool: np.Name}},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: CandidateTypes},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		},
	}
	launched, err := p.Create(ctx, claim)
	if launched != nil && launched.Status.ProviderID != "" {
		// Even on a failed check below, the instance does not outlive the test.
		t.Cleanup(func() { terminate(t, p, ec2c, launched, s) })
	}
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	pid := launched.Status.ProviderID
	t.Logf("launched %s (%s, %s)", pid, launched.Labels[v1.LabelInstanceType], launched.Labels[v1.LabelTopologyZone])
	if got := launched.Labels[v1.LabelInstanceType]; got != cheapest {
		t.Errorf("Create launched %s, want the cheapest candidate %s", got, cheapest)
	}
	if launched.Labels[v1.LabelCapacityType] != v1.CapacityTypeOnDemand {
		t.Errorf("capacity type = %s, want on-demand", launched.Labels[v1.LabelCapacityType])
	}

	// 4. Get and List see it, with joiner's tags and this run's identity.
	got, err := p.Get(ctx, pid)
	if err != nil {
		t.Fatalf("Get(%s): %v", pid, err)
	}
	if got.Status.ProviderID != pid || got.Labels[v1.LabelNodePool] != np.Name {
		t.Errorf("Get = %s with labels %v, want %s of NodePool %s", got.Status.ProviderID, got.Labels, pid, np.Name)
	}
	listed, err := p.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	found := false
	for _, c := range listed {
		found = found || c.Status.ProviderID == pid
	}
	if !found {
		t.Errorf("List (%d instances) does not include %s", len(listed), pid)
	}
	tags := instanceTags(ctx, t, ec2c, pid)
	for k, v := range map[string]string{
		awsv1.TagEKSClusterName:                  s.ClusterName,
		"kubernetes.io/cluster/" + s.ClusterName: "owned",
		awsprovider.TagClusterID:                 runID,
		awsprovider.TagNodeClaimUID:              string(claim.UID),
		awsv1.TagNodeClaim:                       claim.Name,
		v1.LabelNodePool:                         np.Name,
		v1.LabelAWSEC2NodeClass:                  nc.Name,
		"joiner.dev/e2e":                         runID,
	} {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
		}
	}

	// 5. Delete, then wait until EC2 says terminated.
	if err := p.Delete(ctx, launched); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	waitTerminated(ctx, t, ec2c, pid, s)
	if _, err := p.Get(ctx, pid); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after termination = %v, want NodeClaimNotFound", err)
	}
}

// refreshPrices runs the provider's price refresher until its first
// refresh has had a chance to finish (it logs and keeps the built-in table
// when the Pricing API cannot be reached).
func refreshPrices(ctx context.Context, t *testing.T, p *awsprovider.Provider) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = p.PricingRefresher().Start(ctx); close(done) }()
	select {
	case <-time.After(20 * time.Second):
	case <-done:
	}
	cancel()
	<-done
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func instanceID(pid string) string { return pid[strings.LastIndex(pid, "/")+1:] }

func describe(ctx context.Context, e *ec2.Client, pid string) (*ec2types.Instance, error) {
	out, err := e.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID(pid)}})
	if err != nil {
		return nil, err
	}
	for _, r := range out.Reservations {
		for i := range r.Instances {
			return &r.Instances[i], nil
		}
	}
	return nil, fmt.Errorf("instance %s not found", pid)
}

func instanceTags(ctx context.Context, t *testing.T, e *ec2.Client, pid string) map[string]string {
	t.Helper()
	inst, err := describe(ctx, e, pid)
	if err != nil {
		t.Fatalf("describing %s: %v", pid, err)
	}
	out := map[string]string{}
	for _, tg := range inst.Tags {
		out[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return out
}

func waitTerminated(ctx context.Context, t *testing.T, e *ec2.Client, pid string, s Settings) {
	t.Helper()
	deadline := time.Now().Add(s.Timeout)
	for {
		inst, err := describe(ctx, e, pid)
		if err != nil {
			t.Fatalf("describing %s: %v", pid, err)
		}
		if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameTerminated {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %v after %v, want terminated", pid, inst.State, s.Timeout)
		}
		time.Sleep(s.Poll)
	}
}

// terminate is the safety net: it deletes the instance through the
// provider (which acts only on this run's instances) if the test stopped
// before step 5, and waits for EC2 to confirm.
func terminate(t *testing.T, p *awsprovider.Provider, e *ec2.Client, claim *v1.NodeClaim, s Settings) {
	ctx := context.Background()
	inst, err := describe(ctx, e, claim.Status.ProviderID)
	if err == nil && inst.State != nil && inst.State.Name == ec2types.InstanceStateNameTerminated {
		return
	}
	t.Logf("cleanup: terminating %s", claim.Status.ProviderID)
	if err := p.Delete(ctx, claim); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("cleanup: terminating %s: %v; terminate it by hand", claim.Status.ProviderID, err)
		return
	}
	waitTerminated(ctx, t, e, claim.Status.ProviderID, s)
}

// deleteNodeClass deletes the EC2NodeClass and runs its finalizer, which
// deletes the launch templates and the instance profile made for it.
func deleteNodeClass(t *testing.T, kube client.Client, c *awsprovider.NodeClassController, key reconcile.Request) {
	ctx := context.Background()
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, key.NamespacedName, nc); err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	if err := kube.Delete(ctx, nc); err != nil {
		t.Errorf("cleanup: deleting EC2NodeClass: %v", err)
		return
	}
	if _, err := c.Reconcile(ctx, key); err != nil {
		t.Errorf("cleanup: deleting the launch templates and instance profile of %s: %v; delete them by hand (tag %s=%s)", key.Name, err, v1.LabelAWSEC2NodeClass, key.Name)
	}
}
