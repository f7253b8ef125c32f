//go:build kueue

package kueue_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/test"
)

// gpuType is the GPU instance type of the gangs (one NVIDIA T4).
const gpuType = "g4dn.xlarge"

// localEC2 is moto_server seeded like an EKS account, behind the local
// EC2's front (a FaultProxy holding CreateFleet to a room per instance
// type, all or nothing under MinTargetCapacity), with its instances booted
// into the control plane's Nodes (kwok is their kubelet).
type localEC2 struct {
	server  *localec2.Server
	cluster *localec2.Cluster
	proxy   *localec2.FaultProxy
}

// startLocalEC2 starts the local EC2 for a cluster of t's with room for
// room[type] more instances of each named type.
func startLocalEC2(t *testing.T, room map[string]int) *localEC2 {
	t.Helper()
	ctx := t.Context()
	name := test.Name(t, "c")
	if len(name) > 40 {
		name = strings.TrimLeft(name[len(name)-40:], "-")
	}
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{LogPath: filepath.Join(t.TempDir(), "moto_server.log")},
		localec2.SeedOptions{ClusterName: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	proxy, err := localec2.StartFaultProxy(srv.Endpoint, localec2.FaultRates{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	proxy.Capacity = localec2.NewInstanceCapacity(room)
	l := &localEC2{server: srv, cluster: cl, proxy: proxy}
	l.boot(t)
	return l
}

// boot maps the node role in aws-auth and boots the local EC2's
// instances into Nodes until the test ends.
func (l *localEC2) boot(t *testing.T) {
	t.Helper()
	env := test.Env(t)
	cfg := l.server.Config()
	out, err := iam.NewFromConfig(cfg).GetRole(t.Context(), &iam.GetRoleInput{RoleName: aws.String(l.cluster.RoleName)})
	if err != nil {
		t.Fatalf("reading node role %s: %v", l.cluster.RoleName, err)
	}
	if err := bootstrap.MapNodeRole(t.Context(), env.Client, aws.ToString(out.Role.Arn)); err != nil {
		t.Fatal(err)
	}
	nodes, err := bootstrap.New(bootstrap.Options{Client: env.Client, EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg),
		ClusterName: l.cluster.Name, Region: localec2.Region, Interval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = nodes.Start(logr.NewContext(ctx, logr.Discard()))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// nodeClass is an EC2NodeClass of the seeded cluster's subnets, security
// group and role.
func (l *localEC2) nodeClass(t *testing.T) *awsv1.EC2NodeClass {
	discovery := map[string]string{localec2.TagDiscovery: l.cluster.Name}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       l.cluster.RoleName,
		},
	}
}

// running counts the local EC2's pending and running instances.
func (l *localEC2) running(t *testing.T) int {
	t.Helper()
	out, err := ec2.NewFromConfig(l.server.Config()).DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
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

// startJoiner runs the joiner binary as `joiner controller
// --cloud-provider=aws` for l's cluster, its SDK pointed at l's front.
func startJoiner(t *testing.T, l *localEC2) *test.JoinerProcess {
	t.Helper()
	env := test.Env(t)
	return test.StartJoiner(t, joinerBin.Path(t), "joiner", []string{"controller",
		"--kubeconfig=" + env.ControlPlane.KubeconfigPath(), "--cluster-name=" + l.cluster.Name,
		"--metrics-port=0", "--health-probe-port=0", "--leader-election-name=" + l.cluster.Name,
		"--cloud-provider=aws", "--cluster-endpoint=" + env.Config.Host, "--isolated-vpc", "--ssm-parameter-root=" + l.cluster.ParameterRoot,
	}, []string{"AWS_ENDPOINT_URL=" + l.proxy.Endpoint, "AWS_REGION=" + localec2.Region,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true"})
}
