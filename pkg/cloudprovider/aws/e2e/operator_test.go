package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	"github.com/joiner-dev/joiner/pkg/test"
)

// `joiner controller --cloud-provider=aws` runs the AWS provider from the
// SDK's default chain (AWS_ENDPOINT_URL pointing at the local EC2): its
// EC2NodeClass controller makes the node class Ready and a NodeClaim is
// launched through CreateFleet.
func TestControllerRunsWithTheAWSProvider(t *testing.T) {
	env := test.Env(t)
	bin := filepath.Join(t.TempDir(), "joiner")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/joiner-dev/joiner/cmd/joiner").CombinedOutput(); err != nil {
		t.Fatalf("building joiner: %v\n%s", err, out)
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
	tags := tagsOf(inst.Tags)
	if tags[awsv1.TagEKSClusterName] != cluster || tags["joiner.dev/cluster-id"] == "" || tags[awsv1.TagNodeClaim] != claim.Name {
		t.Errorf("instance tags = %v, want the controller's cluster name, id and the NodeClaim", tags)
	}
	// Deleting the NodeClaim terminates the instance.
	if err := env.Client.Delete(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		out, err := ec2.NewFromConfig(local.server.Config()).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{aws.ToString(inst.InstanceId)}})
		if err != nil {
			return err
		}
		if st := out.Reservations[0].Instances[0].State.Name; st != "terminated" && st != "shutting-down" {
			return fmt.Errorf("instance is %s", st)
		}
		return nil
	})
}
