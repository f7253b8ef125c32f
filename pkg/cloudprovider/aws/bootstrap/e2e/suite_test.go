// Package e2e boots instances of the local EC2 (moto_server, through
// localec2) into kwok Nodes of a real control plane with the emulated
// bootstrap, and checks that joiner's registration diagnosis explains the
// seeds' failures.
package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

// kwokLabel marks the Nodes kwok keeps Ready.
const kwokLabel = "joiner.test/kwok"

// clusterName is the cluster the emulated kubelets must be told to join.
const clusterName = "boot-e2e"

const endpoint = "https://boot-e2e.example:6443"

// local is the local EC2 of the whole package.
var local struct {
	cfg     aws.Config
	cluster *localec2.Cluster
	ec2     *ec2.Client
	iam     *iam.Client
	// profiles are instance profiles of the seeded node role (mapped) and
	// of a role nobody mapped.
	mappedProfile, unmappedProfile string
	mappedRoleARN                  string
	// bootstrapperOnly is the profile of a role mapped without the group
	// system:nodes.
	bootstrapperOnlyProfile, bootstrapperOnlyRoleARN string
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	srv, cl, err := localec2.StartSeeded(ctx, localec2.StartOptions{}, localec2.SeedOptions{ClusterName: clusterName, KubernetesVersions: []string{"1.36"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	if err := seed(ctx, srv.Config(), cl); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: seeding the local EC2:", err)
		return 1
	}
	return test.Run(m, controlplane.Options{
		ControllerManager: false,
		Kwok:              true,
		KwokNodeSelector:  kwokLabel + "=true",
		CRDDirectories:    []string{test.RepoPath("pkg/apis/crds")},
		Scheme:            test.Scheme(),
	})
}

// seed adds the roles and instance profiles the diagnosis tests need to
// the seeded cluster.
func seed(ctx context.Context, cfg aws.Config, cl *localec2.Cluster) error {
	local.cfg, local.cluster = cfg, cl
	local.ec2, local.iam = ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	role, err := local.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(cl.RoleName)})
	if err != nil {
		return err
	}
	local.mappedRoleARN = aws.ToString(role.Role.Arn)
	if local.mappedProfile, err = profile(ctx, "mapped", cl.RoleName); err != nil {
		return err
	}
	if _, err := local.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("ControllerRole-" + clusterName), AssumeRolePolicyDocument: aws.String("{}")}); err != nil {
		return err
	}
	if local.unmappedProfile, err = profile(ctx, "unmapped", "ControllerRole-"+clusterName); err != nil {
		return err
	}
	r, err := local.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("BootstrapperOnly"), Path: aws.String("/nodes/"), AssumeRolePolicyDocument: aws.String("{}")})
	if err != nil {
		return err
	}
	local.bootstrapperOnlyRoleARN = aws.ToString(r.Role.Arn)
	local.bootstrapperOnlyProfile, err = profile(ctx, "bootstrapper-only", "BootstrapperOnly")
	return err
}

func profile(ctx context.Context, name, role string) (string, error) {
	if _, err := local.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		return "", err
	}
	_, err := local.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
	return name, err
}

// launch is what an instance is launched with.
type launch struct {
	family, arch, instanceType string
	userData                   []byte
	profile                    string
}

// runInstance launches one instance of the local EC2 in the first seeded
// subnet.
func runInstance(t *testing.T, l launch) ec2types.Instance {
	t.Helper()
	ami := local.cluster.AMI(l.family, l.arch)
	if ami == nil {
		t.Fatalf("no seeded %s %s image", l.family, l.arch)
	}
	in := &ec2.RunInstancesInput{
		ImageId: aws.String(ami.ID), InstanceType: ec2types.InstanceType(l.instanceType),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId: aws.String(local.cluster.Subnets[0].ID),
		UserData: aws.String(base64.StdEncoding.EncodeToString(l.userData)),
	}
	if l.profile != "" {
		in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{Name: aws.String(l.profile)}
	}
	out, err := local.ec2.RunInstances(t.Context(), in)
	if err != nil {
		t.Fatalf("running instance: %v", err)
	}
	inst := out.Instances[0]
	t.Cleanup(func() {
		_, _ = local.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(inst.InstanceId)}})
	})
	return inst
}

// launcher is the cloud provider of the diagnosis tests: it launches each
// NodeClaim as an instance of the local EC2 with the launch the test
// planned for it (a stand-in for the AWS provider, so these tests pin the
// bootstrap and the diagnosis, not instance selection).
type launcher struct {
	mu        sync.Mutex
	plans     map[string]func(nc *v1.NodeClaim) launch
	instances map[string]*v1.NodeClaim
	// diagnoser, when set, names why a NodeClaim's Node cannot register
	// (the AWS provider's own diagnosis, for seed 001).
	diagnoser cloudprovider.RegistrationDiagnoser
}

// WhyNotRegistered asks the diagnoser, when there is one.
func (l *launcher) WhyNotRegistered(ctx context.Context, nc *v1.NodeClaim) (string, error) {
	if l.diagnoser == nil {
		return "", nil
	}
	return l.diagnoser.WhyNotRegistered(ctx, nc)
}

func newLauncher() *launcher {
	return &launcher{plans: map[string]func(*v1.NodeClaim) launch{}, instances: map[string]*v1.NodeClaim{}}
}

func (l *launcher) plan(name string, f func(nc *v1.NodeClaim) launch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.plans[name] = f
}

func (l *launcher) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	l.mu.Lock()
	plan, ok := l.plans[nc.Name]
	for _, inst := range l.instances {
		if inst.UID == nc.UID {
			l.mu.Unlock()
			return inst.DeepCopy(), nil
		}
	}
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no launch planned for nodeclaim %s", nc.Name)
	}
	p := plan(nc)
	ami := local.cluster.AMI(p.family, p.arch)
	out, err := local.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String(ami.ID), InstanceType: ec2types.InstanceType(p.instanceType),
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(local.cluster.Subnets[0].ID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString(p.userData)),
		IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: aws.String(p.profile)},
	})
	if err != nil {
		return nil, fmt.Errorf("running instance for nodeclaim %s: %w", nc.Name, err)
	}
	inst := out.Instances[0]
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	created := nc.DeepCopy()
	if created.Labels == nil {
		created.Labels = map[string]string{}
	}
	created.Labels[v1.LabelInstanceType] = p.instanceType
	created.Labels[v1.LabelTopologyZone] = zone
	created.Labels[v1.LabelCapacityType] = v1.CapacityTypeOnDemand
	created.Status.ProviderID = fmt.Sprintf("aws:///%s/%s", zone, aws.ToString(inst.InstanceId))
	created.Status.ImageID = ami.ID
	created.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")}
	created.Status.Allocatable = created.Status.Capacity.DeepCopy()
	l.mu.Lock()
	l.instances[created.Status.ProviderID] = created
	l.mu.Unlock()
	return created.DeepCopy(), nil
}

func (l *launcher) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	l.mu.Lock()
	_, ok := l.instances[nc.Status.ProviderID]
	delete(l.instances, nc.Status.ProviderID)
	l.mu.Unlock()
	if !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", nc.Status.ProviderID))
	}
	id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
	_, err := local.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	return err
}

func (l *launcher) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nc, ok := l.instances[providerID]; ok {
		return nc.DeepCopy(), nil
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", providerID))
}

func (l *launcher) List(context.Context) ([]*v1.NodeClaim, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*v1.NodeClaim
	for _, nc := range l.instances {
		out = append(out, nc.DeepCopy())
	}
	return out, nil
}

func (l *launcher) GetInstanceTypes(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return nil, nil
}

func (l *launcher) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

func (l *launcher) Name() string { return "aws" }

func (l *launcher) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&awsv1.EC2NodeClass{}}
}

var _ cloudprovider.CloudProvider = (*launcher)(nil)

// within is the wait for the emulator and controllers in these tests.
const within = 30 * time.Second
