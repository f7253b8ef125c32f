package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestChaosEC2 runs the same seeded rounds with `--cloud-provider=aws`
// against the local EC2 (moto_server). Faults are injected outside joiner:
// each replica's AWS endpoint is a seeded fault proxy in front of
// moto_server answering with EC2's own errors. CHAOS_ROUNDS (default 1)
// and CHAOS_SEED (default 1) choose the rounds, after the EC2 regression
// rounds; `make chaos CLOUD=aws` runs more.
func TestChaosEC2(t *testing.T) {
	runRounds(t, &ec2Cloud{proxies: map[string]*localec2.FaultProxy{}})
}

// ec2Cloud is moto_server seeded with the cluster's VPC, subnets,
// security group, node role and images; emulated machines (the bootstrap
// package, with kwok as the kubelet) register a Node for each instance
// whose user data and role join the cluster.
type ec2Cloud struct {
	server  *localec2.Server
	cluster *localec2.Cluster

	mu      sync.Mutex
	proxies map[string]*localec2.FaultProxy // replica name -> its proxy
}

func (c *ec2Cloud) name() string { return "aws" }

func (c *ec2Cloud) start(t *testing.T, w *world) {
	ctx := t.Context()
	var err error
	c.server, c.cluster, err = localec2.StartSeeded(ctx, localec2.StartOptions{LogPath: filepath.Join(t.TempDir(), "moto_server.log")},
		localec2.SeedOptions{ClusterName: w.clusterName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.server.Stop() })
	c.machines(t, w.env, c.cluster.RoleName)
}

// machines maps role in env's aws-auth and boots the local EC2's
// instances of that role into env's Nodes until the test ends.
func (c *ec2Cloud) machines(t *testing.T, env *test.Environment, role string) {
	cfg := c.server.Config()
	ctx, cancel := context.WithCancel(context.Background())
	out, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)})
	if err != nil {
		cancel()
		t.Fatalf("reading node role %s: %v", role, err)
	}
	if err := bootstrap.MapNodeRole(ctx, env.Client, aws.ToString(out.Role.Arn)); err != nil {
		cancel()
		t.Fatal(err)
	}
	nodes, err := bootstrap.New(bootstrap.Options{Client: env.Client, EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg),
		ClusterName: c.cluster.Name, Region: localec2.Region, Interval: 500 * time.Millisecond})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
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

func (c *ec2Cloud) nodeClass(t *testing.T, w *world) (client.Object, *v1.NodeClassReference) {
	discovery := map[string]string{localec2.TagDiscovery: c.cluster.Name}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "nc")},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       c.cluster.RoleName,
		},
	}
	return nc, &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: nc.Name}
}

func (c *ec2Cloud) requirements() []v1.NodeSelectorRequirementWithMinValues {
	// Two families of 2- and 4-core nodes: several to launch and
	// consolidate, and a short CreateFleet.
	return []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5"}},
		{Key: v1.LabelAWSInstanceCPU, Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "4"}},
	}
}

// args are the AWS flags of a joiner of env's cluster; environ points its
// SDK at endpoint.
func (c *ec2Cloud) args(env *test.Environment) []string {
	return []string{"--cloud-provider=aws", "--cluster-endpoint=" + env.Config.Host, "--isolated-vpc", "--ssm-parameter-root=" + c.cluster.ParameterRoot}
}

func environ(endpoint string) []string {
	return []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=" + localec2.Region,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true"}
}

func (c *ec2Cloud) replica(t *testing.T, w *world, f sim.CallFaults) ([]string, []string, string) {
	p, err := localec2.StartFaultProxy(c.server.Endpoint, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c.mu.Lock()
	c.proxies[fmt.Sprintf("replica-%d", w.started)] = p
	c.mu.Unlock()
	return c.args(w.env), environ(p.Endpoint), f.String()
}

// namesake runs with its own node role, mapped only in its own aws-auth:
// its instances boot into its Nodes (registered, never Ready: no kwok),
// ours into ours, though both carry one cluster name.
func (c *ec2Cloud) namesake(t *testing.T, w *world) Identity {
	role := c.cluster.RoleName + "-namesake"
	if _, err := iam.NewFromConfig(c.server.Config()).CreateRole(t.Context(), &iam.CreateRoleInput{
		RoleName: aws.String(role), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`),
	}); err != nil {
		t.Fatalf("creating the namesake's node role: %v", err)
	}
	nc := w.nodeClass.DeepCopyObject().(*awsv1.EC2NodeClass)
	nc.Spec.Role = role
	b := w.startNamesake(t, nc, func(b *test.Environment) { c.machines(t, b, role) }, func(b *test.Environment) []string {
		return w.joinerArgs(b.ControlPlane.KubeconfigPath(), true, c.args(b)...)
	}, environ(c.server.Endpoint))
	return w.namesakeIdentity(t, b)
}

func (c *ec2Cloud) observed() Cloud { return EC2Cloud(c.server.Config()) }

func (c *ec2Cloud) faultsMet(replicas []*replica) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, r := range replicas {
		// A restarted replica's processes share its proxy.
		if p := c.proxies[r.name]; p != nil {
			parts = append(parts, r.name+": "+p.InjectedSummary())
		}
	}
	return strings.Join(parts, "; ")
}
