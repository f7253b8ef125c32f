package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/nodeadm"
	"github.com/joiner-dev/joiner/pkg/test"
)

// `joiner controller --cloud-provider=aws` runs the AWS provider from the
// SDK's default chain (AWS_ENDPOINT_URL pointing at the local EC2): its
// EC2NodeClass controller makes the node class Ready and a NodeClaim is
// launched through CreateFleet. The cluster is an IPv6 EKS cluster and
// CLUSTER_ENDPOINT is set (the usual chart install): the service CIDR still
// comes from EKS DescribeCluster (serviceIpv6Cidr), and the user data EC2
// stored for the AL2023 instance passes the real nodeadm's validation.
func TestControllerRunsWithTheAWSProvider(t *testing.T) {
	env := test.Env(t)
	bin := joinerBinary(t)
	const serviceIPv6CIDR = "fd30:1c53:5f8a::/108"
	if err := localec2.CreateEKSCluster(t.Context(), local.server.Config(), "operator-e2e", "arn:aws:iam::123456789012:role/eks", nil,
		localec2.EKSNetwork{IPFamily: "ipv6", ServiceIPv4CIDR: "10.100.0.0/16", ServiceIPv6CIDR: serviceIPv6CIDR}); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "joiner.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cluster := "operator-e2e"
	cmd := exec.Command(bin, "controller",
		"--kubeconfig="+env.ControlPlane.KubeconfigPath(),
		"--cloud-provider=aws",
		"--cluster-name="+cluster,
		"--cluster-endpoint=https://127.0.0.1:6443",
		"--metrics-port=0", "--health-probe-port=0",
		"--disable-leader-election",
	)
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL="+local.server.Endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"SSM_PARAMETER_ROOT="+localec2.DefaultParameterRoot,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(string(b), "\n")
			t.Logf("joiner log (last lines):\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})

	nc := nodeClass(t)
	env.Create(t, nc)
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		got := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return err
		}
		if !got.IsReady() {
			return fmt.Errorf("EC2NodeClass not Ready: %+v", got.Status.Conditions)
		}
		return nil
	})
	// Launches from a node class that is not Ready yet are refused (and
	// their NodeClaims deleted), as Karpenter's are; so the claim comes now.
	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "claim")},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: ref(nc),
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
	}
	env.Create(t, claim)
	var providerID string
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		c := &v1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), c); err != nil {
			return err
		}
		if !strings.HasPrefix(c.Status.ProviderID, "aws:///") {
			return fmt.Errorf("NodeClaim not launched yet: %+v", c.Status.Conditions)
		}
		providerID = c.Status.ProviderID
		return nil
	})
	inst := describeInstance(t, providerID)
	md, err := localec2.MetadataOf(t.Context(), ec2.NewFromConfig(local.server.Config()), localec2.Region, aws.ToString(inst.InstanceId))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md.UserData), "cidr: "+serviceIPv6CIDR) {
		t.Errorf("the instance's NodeConfig has no spec.cluster.cidr %s:\n%s", serviceIPv6CIDR, md.UserData)
	}
	nodeadmBin, err := nodeadm.Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := nodeadm.Init(t.Context(), nodeadmBin, *md); err != nil {
		t.Errorf("the real nodeadm does not accept the instance's user data: %v\n%s", err, md.UserData)
	}
	tags := tagsOf(inst.Tags)
	if tags[awsv1.TagEKSClusterName] != cluster || tags["joiner.dev/cluster-id"] == "" || tags[awsv1.TagNodeClaim] != claim.Name {
		t.Errorf("instance tags = %v, want the controller's cluster name, id and the NodeClaim", tags)
	}
	// Deleting the NodeClaim terminates the instance.
	if err := env.Client.Delete(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	waitTerminated(t, aws.ToString(inst.InstanceId))
}

// Without an EKS cluster to describe and without CLUSTER_CIDR, `joiner
// controller` stops at start-up naming the setting, rather than launching
// AL2023 nodes whose nodeadm would refuse their NodeConfig.
func TestControllerNeedsTheClusterCIDR(t *testing.T) {
	env := test.Env(t)
	bin := joinerBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "controller",
		"--kubeconfig="+env.ControlPlane.KubeconfigPath(),
		"--cloud-provider=aws", "--cluster-name=no-such-eks-cluster", "--cluster-endpoint=https://127.0.0.1:6443",
		"--metrics-port=0", "--health-probe-port=0", "--disable-leader-election",
	)
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL="+local.server.Endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"SSM_PARAMETER_ROOT="+localec2.DefaultParameterRoot,
	)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set --cluster-cidr (CLUSTER_CIDR)") {
		t.Fatalf("joiner controller without a resolvable cluster CIDR: err %v, want a start-up error naming CLUSTER_CIDR; output:\n%s", err, out)
	}
}

var joinerBuild struct {
	once sync.Once
	bin  string
	err  error
}

// joinerBinary builds joiner once for the package's tests.
func joinerBinary(t *testing.T) string {
	t.Helper()
	joinerBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "joiner-e2e-*")
		if err != nil {
			joinerBuild.err = err
			return
		}
		joinerBuild.bin = filepath.Join(dir, "joiner")
		if out, err := exec.Command("go", "build", "-o", joinerBuild.bin, "github.com/joiner-dev/joiner/cmd/joiner").CombinedOutput(); err != nil {
			joinerBuild.err = fmt.Errorf("building joiner: %w\n%s", err, out)
		}
	})
	if joinerBuild.err != nil {
		t.Fatal(joinerBuild.err)
	}
	return joinerBuild.bin
}
