package bootstrap

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/nodeadm"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// EC2API is the part of the EC2 client the emulated machines call.
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeInstanceAttribute(context.Context, *ec2.DescribeInstanceAttributeInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceAttributeOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeVolumes(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DescribeLaunchTemplateVersions(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// IAMAPI is the part of the IAM client the emulated machines call.
type IAMAPI interface {
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// Defaults.
const (
	DefaultInterval = 250 * time.Millisecond
	// DefaultVMMemoryOverheadPercent is the share of an instance type's
	// memory the hypervisor and firmware keep (Karpenter's default
	// VM_MEMORY_OVERHEAD_PERCENT): a kubelet reports less than the
	// nominal size.
	DefaultVMMemoryOverheadPercent = 0.075
	// KubeletVersion is the version the emulated kubelets report.
	KubeletVersion = "v1.36.3-eks-emulated"
	// AnnotationInstanceID marks the Nodes the emulator registered.
	AnnotationInstanceID = "bootstrap.joiner.dev/instance-id"
	// LabelImageFamily is the image tag localec2 writes; images without it
	// are recognised by name.
	LabelImageFamily = "joiner.dev/ami-family"
	// LabelImageVariant is the image tag localec2 writes for the variant
	// (standard, nvidia, neuron, gpu); only accelerated images carry the
	// drivers that make a GPU or Neuron device a node resource.
	LabelImageVariant = "joiner.dev/ami-variant"
)

// Options configure Nodes.
type Options struct {
	// Client creates and deletes Nodes and reads kube-system/aws-auth.
	Client client.Client
	EC2    EC2API
	IAM    IAMAPI
	// ClusterName is this cluster: a bootstrap naming another cluster
	// joins that one, not this.
	ClusterName string
	// Region labels the Nodes (topology.kubernetes.io/region).
	Region string
	// AccessEntries are the principal ARNs of emulated EKS access entries
	// of type EC2_LINUX (moto has no access entry API); a node role listed
	// here needs no aws-auth mapping.
	AccessEntries []string
	// ExtraLabels are added to every Node (a kwok node selector label).
	ExtraLabels map[string]string
	// VMMemoryOverheadPercent defaults to DefaultVMMemoryOverheadPercent.
	VMMemoryOverheadPercent float64
	// Nodeadm is the path of the AL2023 image's own nodeadm (package
	// nodeadm); when set, every AL2023 instance's user data is also judged
	// by `nodeadm init` against the instance's metadata service, and an
	// instance whose user data it refuses never joins, with nodeadm's
	// reason. When empty only the imitation in Parse judges.
	Nodeadm string
	// Clock defaults to the real clock; Interval to DefaultInterval.
	Clock    clock.WithTicker
	Interval time.Duration
}

// Outcome is what became of one instance's boot.
type Outcome struct {
	InstanceID string
	// NodeName is the Node it registered, "" when it did not.
	NodeName string
	// Reason says why the node never joins (empty when it registered).
	Reason string
}

// Nodes plays the machines of the local EC2: see the package doc.
type Nodes struct {
	opts Options

	mu       sync.Mutex
	outcomes map[string]Outcome
	types    map[string]ec2types.InstanceTypeInfo
	images   map[string]ec2types.Image
	volumes  map[string]int64
	profiles map[string]string // instance profile name -> role ARN
	// userData caches each instance's user data (fixed for its life) and
	// templates the launch template found for an image and user data, so
	// an instance that never joins does not cost EC2 calls every pass.
	userDatas map[string]instanceUserData
	templates map[string]*ec2types.ResponseLaunchTemplateData
	// nodeadmVerdicts holds the real nodeadm's verdict on each AL2023
	// instance's user data ("" accepted).
	nodeadmVerdicts map[string]string
}

type instanceUserData struct {
	raw []byte
	lt  *ec2types.ResponseLaunchTemplateData
}

var (
	_ manager.Runnable               = (*Nodes)(nil)
	_ manager.LeaderElectionRunnable = (*Nodes)(nil)
)

// New validates opts and returns the runnable.
func New(opts Options) (*Nodes, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if opts.EC2 == nil || opts.IAM == nil {
		errs = append(errs, errors.New("EC2 and IAM are required"))
	}
	if opts.ClusterName == "" {
		errs = append(errs, errors.New("ClusterName is required"))
	}
	if opts.Interval < 0 || opts.VMMemoryOverheadPercent < 0 || opts.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, errors.New("Interval must not be negative and VMMemoryOverheadPercent must be in [0, 1)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("emulated nodes options: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.VMMemoryOverheadPercent == 0 {
		opts.VMMemoryOverheadPercent = DefaultVMMemoryOverheadPercent
	}
	return &Nodes{opts: opts, outcomes: map[string]Outcome{}, types: map[string]ec2types.InstanceTypeInfo{},
		images: map[string]ec2types.Image{}, volumes: map[string]int64{}, profiles: map[string]string{},
		nodeadmVerdicts: map[string]string{},
		userDatas:       map[string]instanceUserData{}, templates: map[string]*ec2types.ResponseLaunchTemplateData{}}, nil
}

// NeedLeaderElection: machines boot whether or not a controller leads.
func (n *Nodes) NeedLeaderElection() bool { return false }

// Start runs Step every interval until ctx is done.
func (n *Nodes) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("emulated-nodes")
	ctx = log.IntoContext(ctx, logger)
	t := n.opts.Clock.NewTicker(n.opts.Interval)
	defer t.Stop()
	for {
		if err := n.Step(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "emulating node bootstrap")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Outcome returns what became of an instance's boot, once Step saw it.
func (n *Nodes) Outcome(instanceID string) (Outcome, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := n.outcomes[instanceID]
	return o, ok
}

// Outcomes returns every outcome Step recorded, sorted by instance.
func (n *Nodes) Outcomes() []Outcome {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Outcome, 0, len(n.outcomes))
	for _, o := range n.outcomes {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Outcome) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	return out
}

// Step boots every running instance that has no Node yet, and removes the
// Nodes of instances that are no longer running (as the cloud controller
// manager's node lifecycle controller does).
func (n *Nodes) Step(ctx context.Context) error {
	var running []ec2types.Instance
	p := ec2.NewDescribeInstancesPaginator(n.opts.EC2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"running"}}},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing running instances: %w", err)
		}
		for _, r := range out.Reservations {
			running = append(running, r.Instances...)
		}
	}
	nodes := &corev1.NodeList{}
	if err := n.opts.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	byProviderID := map[string]bool{}
	for _, node := range nodes.Items {
		byProviderID[node.Spec.ProviderID] = true
	}
	var errs []error
	alive := map[string]bool{}
	for i := range running {
		inst := &running[i]
		id := aws.ToString(inst.InstanceId)
		alive[id] = true
		if byProviderID[ProviderID(inst)] {
			continue
		}
		if err := n.boot(ctx, inst); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", id, err))
		}
	}
	n.mu.Lock()
	for id := range n.userDatas {
		if !alive[id] {
			delete(n.userDatas, id)
		}
	}
	for id := range n.nodeadmVerdicts {
		if !alive[id] {
			delete(n.nodeadmVerdicts, id)
		}
	}
	n.mu.Unlock()
	for i := range nodes.Items {
		node := &nodes.Items[i]
		id := node.Annotations[AnnotationInstanceID]
		if id == "" || alive[id] || node.DeletionTimestamp != nil {
			continue
		}
		if err := n.opts.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("removing node %s of instance %s: %w", node.Name, id, err))
			continue
		}
		logr.FromContextOrDiscard(ctx).Info("instance is gone, node removed", logging.Instance, id, logging.Node, klog.KObj(node))
	}
	return errors.Join(errs...)
}

// ProviderID is the instance's providerID as the AWS cloud provider sets it.
func ProviderID(inst *ec2types.Instance) string {
	zone := ""
	if inst.Placement != nil {
		zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	return fmt.Sprintf("aws:///%s/%s", zone, aws.ToString(inst.InstanceId))
}

// boot decides whether inst's kubelet joins this cluster and registers its
// Node if it does.
func (n *Nodes) boot(ctx context.Context, inst *ec2types.Instance) error {
	id := aws.ToString(inst.InstanceId)
	node, reason, err := n.node(ctx, inst)
	if err != nil {
		return err
	}
	if reason != "" {
		n.record(ctx, Outcome{InstanceID: id, Reason: reason})
		return nil
	}
	status := node.Status
	err = n.opts.Client.Create(ctx, node)
	if apierrors.IsAlreadyExists(err) {
		n.record(ctx, Outcome{InstanceID: id, NodeName: node.Name})
		return nil
	}
	if err != nil {
		return fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	// The API server drops status on create; the kubelet posts it. A merge
	// patch, since kwok may already be updating the Node's conditions.
	base := node.DeepCopy()
	node.Status.Capacity, node.Status.Allocatable, node.Status.NodeInfo, node.Status.Phase =
		status.Capacity, status.Allocatable, status.NodeInfo, status.Phase
	if err := n.opts.Client.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("posting status of node %s: %w", node.Name, err)
	}
	n.record(ctx, Outcome{InstanceID: id, NodeName: node.Name})
	return nil
}

// record stores an outcome and logs it when it changed: the emulated
// console log.
func (n *Nodes) record(ctx context.Context, o Outcome) {
	n.mu.Lock()
	prev, seen := n.outcomes[o.InstanceID]
	n.outcomes[o.InstanceID] = o
	n.mu.Unlock()
	if seen && prev == o {
		return
	}
	logger := logr.FromContextOrDiscard(ctx)
	if o.Reason != "" {
		logger.Info("instance never joins the cluster", logging.Instance, o.InstanceID, logging.Reason, o.Reason)
		return
	}
	logger.Info("instance registered its node", logging.Instance, o.InstanceID, logging.Node, klog.KRef("", o.NodeName))
}

// node builds the Node inst's kubelet registers, or says why there is none.
func (n *Nodes) node(ctx context.Context, inst *ec2types.Instance) (*corev1.Node, string, error) {
	id := aws.ToString(inst.InstanceId)
	it, err := n.instanceType(ctx, string(inst.InstanceType))
	if err != nil {
		return nil, "", err
	}
	img, err := n.image(ctx, aws.ToString(inst.ImageId))
	if err != nil {
		return nil, "", err
	}
	imageArch := string(img.Architecture)
	var typeArchs []string
	if it.ProcessorInfo != nil {
		for _, a := range it.ProcessorInfo.SupportedArchitectures {
			typeArchs = append(typeArchs, string(a))
		}
	}
	if !contains(typeArchs, imageArch) {
		return nil, fmt.Sprintf("image %s (%s) is built for %s but instance type %s runs %s: the instance never boots an operating system",
			aws.ToString(img.ImageId), aws.ToString(img.Name), imageArch, inst.InstanceType, strings.Join(typeArchs, ", ")), nil
	}
	family := ImageFamily(img)
	raw, lt, err := n.userData(ctx, inst)
	if err != nil {
		return nil, "", err
	}
	// The real nodeadm judges first, so its verdict is the one reported.
	if family == awsv1.AMIFamilyAL2023 && n.opts.Nodeadm != "" {
		if reason, err := n.nodeadm(ctx, inst, raw); err != nil || reason != "" {
			return nil, reason, err
		}
	}
	k, perr := Parse(family, raw)
	if perr != nil {
		return nil, fmt.Sprintf("%s image %s: %v", family, aws.ToString(img.Name), perr), nil
	}
	if k.ClusterName != n.opts.ClusterName {
		return nil, fmt.Sprintf("its bootstrap joins cluster %q, not %q", k.ClusterName, n.opts.ClusterName), nil
	}
	roleARN, reason, err := n.role(ctx, inst, lt)
	if err != nil || reason != "" {
		return nil, reason, err
	}
	reason, err = authorize(ctx, n.opts.Client, roleARN, n.opts.AccessEntries)
	if err != nil || reason != "" {
		return nil, reason, err
	}
	rootGiB, err := n.rootVolumeGiB(ctx, inst)
	if err != nil {
		return nil, "", err
	}

	name := aws.ToString(inst.PrivateDnsName)
	if name == "" {
		name = "ip-" + strings.TrimPrefix(id, "i-")
	}
	arch := map[string]string{"x86_64": "amd64", "arm64": "arm64"}[imageArch]
	labels := map[string]string{}
	for k, v := range n.opts.ExtraLabels {
		labels[k] = v
	}
	for k, v := range k.Labels {
		labels[k] = v
	}
	zone := ""
	if inst.Placement != nil {
		zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	// Set by the kubelet and the cloud controller manager.
	labels[corev1.LabelHostname] = name
	labels[corev1.LabelArchStable] = arch
	os := "linux"
	if k.OS != "" {
		os = k.OS
	}
	labels[corev1.LabelOSStable] = os
	labels[corev1.LabelInstanceTypeStable] = string(inst.InstanceType)
	labels[corev1.LabelTopologyZone] = zone
	if n.opts.Region != "" {
		labels[corev1.LabelTopologyRegion] = n.opts.Region
	}
	capacity, allocatable := n.resources(it, k, rootGiB)
	addAccelerators(capacity, allocatable, it, imageVariant(img))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", AnnotationInstanceID: id},
		},
		Spec: corev1.NodeSpec{ProviderID: ProviderID(inst), Taints: k.Taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       corev1.NodeRunning,
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: arch, OperatingSystem: os, KubeletVersion: KubeletVersion,
				MachineID: id, SystemUUID: id, BootID: id,
			},
		},
	}, "", nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ImageFamily is the AMI family an image boots like: its
// joiner.dev/ami-family tag, else recognised from the EKS image names.
// Unknown images are treated as AL2-style (a custom image built from the
// EKS AL2 recipe, with /etc/eks/bootstrap.sh).
func ImageFamily(img ec2types.Image) string {
	for _, t := range img.Tags {
		if aws.ToString(t.Key) == LabelImageFamily {
			return aws.ToString(t.Value)
		}
	}
	name := strings.ToLower(aws.ToString(img.Name))
	switch {
	case strings.Contains(name, "windows"):
		return awsv1.AMIFamilyWindows2022
	case strings.Contains(name, "al2023"):
		return awsv1.AMIFamilyAL2023
	case strings.Contains(name, "bottlerocket"):
		return awsv1.AMIFamilyBottlerocket
	}
	return awsv1.AMIFamilyAL2
}

func (n *Nodes) instanceType(ctx context.Context, name string) (ec2types.InstanceTypeInfo, error) {
	n.mu.Lock()
	it, ok := n.types[name]
	n.mu.Unlock()
	if ok {
		return it, nil
	}
	out, err := n.opts.EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{ec2types.InstanceType(name)}})
	if err != nil {
		return it, fmt.Errorf("describing instance type %s: %w", name, err)
	}
	if len(out.InstanceTypes) == 0 {
		return it, fmt.Errorf("instance type %s does not exist", name)
	}
	n.mu.Lock()
	n.types[name] = out.InstanceTypes[0]
	n.mu.Unlock()
	return out.InstanceTypes[0], nil
}

func (n *Nodes) image(ctx context.Context, id string) (ec2types.Image, error) {
	n.mu.Lock()
	img, ok := n.images[id]
	n.mu.Unlock()
	if ok {
		return img, nil
	}
	out, err := n.opts.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if err != nil {
		return img, fmt.Errorf("describing image %s: %w", id, err)
	}
	if len(out.Images) == 0 {
		return img, fmt.Errorf("image %s does not exist", id)
	}
	n.mu.Lock()
	n.images[id] = out.Images[0]
	n.mu.Unlock()
	return out.Images[0], nil
}

// userData is the instance's user data and, when it came from a launch
// template, that template's data.
func (n *Nodes) userData(ctx context.Context, inst *ec2types.Instance) ([]byte, *ec2types.ResponseLaunchTemplateData, error) {
	id := aws.ToString(inst.InstanceId)
	n.mu.Lock()
	cached, ok := n.userDatas[id]
	n.mu.Unlock()
	if ok {
		return cached.raw, cached.lt, nil
	}
	raw, lt, err := n.describeUserData(ctx, inst)
	if err != nil {
		return nil, nil, err
	}
	n.mu.Lock()
	n.userDatas[id] = instanceUserData{raw: raw, lt: lt}
	n.mu.Unlock()
	return raw, lt, nil
}

func (n *Nodes) describeUserData(ctx context.Context, inst *ec2types.Instance) ([]byte, *ec2types.ResponseLaunchTemplateData, error) {
	out, err := n.opts.EC2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{
		InstanceId: inst.InstanceId, Attribute: ec2types.InstanceAttributeNameUserData,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading user data: %w", err)
	}
	var encoded string
	if out.UserData != nil {
		encoded = aws.ToString(out.UserData.Value)
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, nil, fmt.Errorf("decoding user data: %w", err)
	}
	if inst.IamInstanceProfile != nil {
		return raw, nil, nil
	}
	lt, err := n.launchTemplate(ctx, aws.ToString(inst.ImageId), encoded)
	return raw, lt, err
}

// launchTemplate finds the launch template an instance was launched from
// by its image and user data. moto's CreateFleet copies a template's user
// data onto the instance but not its instance profile, so the emulator
// reads the profile from the template, as EC2 would have applied it.
func (n *Nodes) launchTemplate(ctx context.Context, imageID, userData string) (*ec2types.ResponseLaunchTemplateData, error) {
	key := imageID + "\x00" + userData
	n.mu.Lock()
	lt, ok := n.templates[key]
	n.mu.Unlock()
	if ok {
		return lt, nil
	}
	lt, err := n.findLaunchTemplate(ctx, imageID, userData)
	if err != nil || lt == nil {
		return lt, err
	}
	n.mu.Lock()
	n.templates[key] = lt
	n.mu.Unlock()
	return lt, nil
}

func (n *Nodes) findLaunchTemplate(ctx context.Context, imageID, userData string) (*ec2types.ResponseLaunchTemplateData, error) {
	p := ec2.NewDescribeLaunchTemplatesPaginator(n.opts.EC2, &ec2.DescribeLaunchTemplatesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing launch templates: %w", err)
		}
		for _, lt := range out.LaunchTemplates {
			v, err := n.opts.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
				LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{"$Latest"},
			})
			if err != nil {
				return nil, fmt.Errorf("describing launch template %s: %w", aws.ToString(lt.LaunchTemplateId), err)
			}
			for _, ver := range v.LaunchTemplateVersions {
				d := ver.LaunchTemplateData
				if d != nil && aws.ToString(d.ImageId) == imageID && aws.ToString(d.UserData) == userData {
					return d, nil
				}
			}
		}
	}
	return nil, nil
}

// role is the IAM role of the instance's profile: the identity its kubelet
// authenticates with.
func (n *Nodes) role(ctx context.Context, inst *ec2types.Instance, lt *ec2types.ResponseLaunchTemplateData) (string, string, error) {
	var profile string
	switch {
	case inst.IamInstanceProfile != nil:
		profile = aws.ToString(inst.IamInstanceProfile.Arn)
	case lt != nil && lt.IamInstanceProfile != nil:
		profile = aws.ToString(lt.IamInstanceProfile.Arn)
		if profile == "" {
			profile = aws.ToString(lt.IamInstanceProfile.Name)
		}
	}
	if profile == "" {
		return "", "the instance has no IAM instance profile, so its kubelet has no AWS credentials to authenticate to the cluster", nil
	}
	name := profile[strings.LastIndex(profile, "/")+1:]
	n.mu.Lock()
	arn, ok := n.profiles[name]
	n.mu.Unlock()
	if ok {
		return arn, "", nil
	}
	out, err := n.opts.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return "", fmt.Sprintf("instance profile %s cannot be read (%v), so the instance has no credentials", name, err), nil
	}
	if len(out.InstanceProfile.Roles) == 0 {
		return "", fmt.Sprintf("instance profile %s holds no role, so the instance has no credentials", name), nil
	}
	arn = aws.ToString(out.InstanceProfile.Roles[0].Arn)
	n.mu.Lock()
	n.profiles[name] = arn
	n.mu.Unlock()
	return arn, "", nil
}

// rootVolumeGiB is the size of the instance's first EBS volume (20 when it
// has none the local EC2 knows).
func (n *Nodes) rootVolumeGiB(ctx context.Context, inst *ec2types.Instance) (int64, error) {
	var volume string
	for _, bdm := range inst.BlockDeviceMappings {
		if bdm.Ebs != nil && bdm.Ebs.VolumeId != nil {
			volume = aws.ToString(bdm.Ebs.VolumeId)
			break
		}
	}
	if volume == "" {
		return 20, nil
	}
	n.mu.Lock()
	size, ok := n.volumes[volume]
	n.mu.Unlock()
	if ok {
		return size, nil
	}
	out, err := n.opts.EC2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{volume}})
	if err != nil {
		return 0, fmt.Errorf("describing volume %s: %w", volume, err)
	}
	size = 20
	if len(out.Volumes) > 0 && out.Volumes[0].Size != nil {
		size = int64(*out.Volumes[0].Size)
	}
	n.mu.Lock()
	n.volumes[volume] = size
	n.mu.Unlock()
	return size, nil
}

// resources are the Node's capacity and allocatable as the kubelet reports
// them: memory less the VM overhead, pods from the user data or the
// ENI-limited default, allocatable less the reservations (the EKS images'
// kube-reserved formula when the user data sets none) and the hard
// eviction thresholds.
func (n *Nodes) resources(it ec2types.InstanceTypeInfo, k *Kubelet, rootGiB int64) (corev1.ResourceList, corev1.ResourceList) {
	var vcpus, memMiB int64
	if it.VCpuInfo != nil {
		vcpus = int64(aws.ToInt32(it.VCpuInfo.DefaultVCpus))
	}
	if it.MemoryInfo != nil {
		memMiB = aws.ToInt64(it.MemoryInfo.SizeInMiB)
	}
	memMiB -= int64(math.Ceil(float64(memMiB) * n.opts.VMMemoryOverheadPercent))
	pods := ENILimitedPods(it)
	if k.MaxPods != nil {
		pods = int64(*k.MaxPods)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(vcpus, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(rootGiB*1024*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
	}
	kubeReserved := k.KubeReserved
	if kubeReserved == nil {
		kubeReserved = map[string]string{
			"cpu":               fmt.Sprintf("%dm", KubeReservedCPUMillis(vcpus)),
			"memory":            fmt.Sprintf("%dMi", 11*pods+255),
			"ephemeral-storage": "1Gi",
		}
	}
	evictionHard := k.EvictionHard
	if evictionHard == nil {
		evictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}
	}
	allocatable := capacity.DeepCopy()
	for _, reserved := range []map[string]string{kubeReserved, k.SystemReserved} {
		for name, v := range reserved {
			subtract(allocatable, corev1.ResourceName(name), v, capacity)
		}
	}
	subtract(allocatable, corev1.ResourceMemory, evictionHard["memory.available"], capacity)
	subtract(allocatable, corev1.ResourceEphemeralStorage, evictionHard["nodefs.available"], capacity)
	return capacity, allocatable
}

// imageVariant is the image's variant tag, "" when it has none.
func imageVariant(img ec2types.Image) string {
	for _, t := range img.Tags {
		if aws.ToString(t.Key) == LabelImageVariant {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// addAccelerators reports the instance's NVIDIA GPUs (nvidia.com/gpu) and
// Neuron devices (aws.amazon.com/neuron) as the device plugins do, only
// when the image carries their drivers: an NVIDIA or Neuron variant (AL2's
// gpu image serves both). On a standard image they are never reported,
// and a NodeClaim that needs them never initialises, as on EC2.
func addAccelerators(capacity, allocatable corev1.ResourceList, it ec2types.InstanceTypeInfo, variant string) {
	add := func(name corev1.ResourceName, n int64) {
		if n > 0 {
			capacity[name] = *resource.NewQuantity(n, resource.DecimalSI)
			allocatable[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	if g := it.GpuInfo; g != nil && (variant == "nvidia" || variant == "gpu") {
		var n int64
		for _, gpu := range g.Gpus {
			if strings.EqualFold(aws.ToString(gpu.Manufacturer), "nvidia") {
				n += int64(aws.ToInt32(gpu.Count))
			}
		}
		add("nvidia.com/gpu", n)
	}
	if d := it.NeuronInfo; d != nil && (variant == "neuron" || variant == "gpu") {
		var n int64
		for _, dev := range d.NeuronDevices {
			n += int64(aws.ToInt32(dev.Count))
		}
		add("aws.amazon.com/neuron", n)
	}
}

// subtract takes a quantity or a percentage of capacity off list[name],
// never below zero.
func subtract(list corev1.ResourceList, name corev1.ResourceName, v string, capacity corev1.ResourceList) {
	have, ok := list[name]
	if !ok || v == "" {
		return
	}
	var q resource.Quantity
	if pct, isPct := strings.CutSuffix(v, "%"); isPct {
		var f float64
		if _, err := fmt.Sscanf(pct, "%g", &f); err != nil {
			return
		}
		c := capacity[name]
		q = *resource.NewQuantity(int64(float64(c.Value())*f/100), c.Format)
	} else {
		var err error
		if q, err = resource.ParseQuantity(v); err != nil {
			return
		}
	}
	have.Sub(q)
	if have.Sign() < 0 {
		have = *resource.NewQuantity(0, have.Format)
	}
	list[name] = have
}

// ENILimitedPods is the EKS images' default max-pods for an instance type:
// ENIs × (IPv4 addresses per ENI − 1) + 2.
func ENILimitedPods(it ec2types.InstanceTypeInfo) int64 {
	if it.NetworkInfo == nil {
		return 110
	}
	enis := int64(aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces))
	ips := int64(aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface))
	if enis == 0 || ips == 0 {
		return 110
	}
	return enis*(ips-1) + 2
}

// KubeReservedCPUMillis is the EKS images' kube-reserved CPU: 6% of the
// first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the
// rest.
func KubeReservedCPUMillis(vcpus int64) int64 {
	var m float64
	for core := int64(1); core <= vcpus; core++ {
		switch {
		case core == 1:
			m += 60
		case core == 2:
			m += 10
		case core <= 4:
			m += 5
		default:
			m += 2.5
		}
	}
	return int64(m)
}

// nodeadm runs the real `nodeadm init` on inst's user data, once per
// instance, and says why it refuses it ("" when it accepts).
func (n *Nodes) nodeadm(ctx context.Context, inst *ec2types.Instance, raw []byte) (string, error) {
	id := aws.ToString(inst.InstanceId)
	n.mu.Lock()
	verdict, judged := n.nodeadmVerdicts[id]
	n.mu.Unlock()
	if judged {
		return verdict, nil
	}
	md := localec2.InstanceMetadata{
		InstanceID: id, InstanceType: string(inst.InstanceType), ImageID: aws.ToString(inst.ImageId), Region: n.opts.Region,
		Architecture: string(inst.Architecture), PrivateIP: aws.ToString(inst.PrivateIpAddress), MAC: "0e:00:00:00:00:01", UserData: raw,
	}
	if inst.Placement != nil {
		md.AvailabilityZone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	for _, ni := range inst.NetworkInterfaces {
		if mac := aws.ToString(ni.MacAddress); mac != "" {
			md.MAC = mac
		}
	}
	err := nodeadm.Init(ctx, n.opts.Nodeadm, md)
	var refusal *nodeadm.Refusal
	switch {
	case errors.As(err, &refusal):
		verdict = "AL2023 image: " + refusal.Error()
	case err != nil:
		return "", err
	}
	n.mu.Lock()
	n.nodeadmVerdicts[id] = verdict
	n.mu.Unlock()
	return verdict, nil
}
