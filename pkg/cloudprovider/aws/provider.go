package aws

import (
	"context"
	"errors"
	"fmt"
	"github.com/joiner-dev/joiner/pkg/events"
	"maps"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
)

// ProviderName is the provider's name and the scheme of its provider IDs
// (aws:///<zone>/<instance-id>).
const ProviderName = "aws"

// TagClusterID carries the launching cluster's unique identity (the UID of
// its kube-system namespace) beside eks:eks-cluster-name. Names are not
// unique: two clusters deployed from one template share a name, and
// Karpenter's name-only filter lets each collect the other's instances.
const TagClusterID = "joiner.dev/cluster-id"

// TagNodeClaimUID is the UID of the NodeClaim an instance was launched for:
// Create's idempotency key across controller restarts.
const TagNodeClaimUID = "joiner.dev/nodeclaim-uid"

// Provider is the AWS CloudProvider.
type Provider struct {
	opts      Options
	ec2       EC2API
	iam       IAMAPI
	eks       EKSAccessAPI
	ssm       SSMAPI
	kube      client.Client
	clock     clock.WithTicker
	cache     *cache.Expiring
	prices    *prices
	types     *instanceTypeCache
	ice       *unavailableOfferings
	exhausted *exhaustedSubnets
	fleet     *fleetBatcher
	templates *launchTemplates
	instances *instanceIndex
	reserved  *reservationAvailability

	describeBatch  *idBatcher[ec2types.Instance]
	terminateBatch *idBatcher[struct{}]

	namesakes identity.Namesakes
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns the AWS provider.
func New(opts Options) (*Provider, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("aws cloud provider options: %w", err)
	}
	p := &Provider{
		opts:  opts,
		ec2:   opts.EC2,
		iam:   opts.IAM,
		eks:   opts.EKS,
		ssm:   opts.SSM,
		kube:  opts.Client,
		clock: opts.Clock,
		cache: cache.NewExpiringWithClock(opts.Clock),
	}
	p.prices = newPrices(opts.Region, opts.EC2, opts.Pricing, opts.IsolatedVPC)
	p.types = newInstanceTypeCache(opts.EC2, opts.Region, opts.Clock)
	p.ice = newUnavailableOfferings(opts.Clock, opts.UnavailableOfferingsTTL)
	p.exhausted = newExhaustedSubnets()
	p.fleet = newFleetBatcher(opts.EC2, opts.CreateFleetBatchIdle, opts.CreateFleetBatchMax)
	p.templates = newLaunchTemplates(p)
	p.instances = newInstanceIndex()
	p.reserved = newReservationAvailability()
	p.describeBatch = newIDBatcher("describe_instances", opts.InstanceBatchIdle, opts.InstanceBatchMax, 500, p.describeInstances)
	p.terminateBatch = newIDBatcher("terminate_instances", opts.InstanceBatchIdle, opts.InstanceBatchMax, 500, p.terminateInstances)
	return p, nil
}

// Name implements cloudprovider.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// GetSupportedNodeClasses implements cloudprovider.CloudProvider.
func (p *Provider) GetSupportedNodeClasses() []client.Object {
	return []client.Object{&awsv1.EC2NodeClass{}}
}

// nodeClass fetches the EC2NodeClass a reference names and checks it is
// ready for launches (Karpenter's pre-checks, §3.6).
func (p *Provider) nodeClass(ctx context.Context, ref *v1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	if ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s %s is not a %s EC2NodeClass", ref.Group, ref.Kind, ref.Name, awsv1.Group))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q not found; create it or fix the nodeClassRef", ref.Name))
		}
		return nil, fmt.Errorf("getting EC2NodeClass %s: %w", ref.Name, err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q is being deleted", ref.Name))
	}
	ready := nc.StatusConditions().Get(awsv1.ConditionTypeReady)
	if ready == nil || ready.Status != "True" {
		msg := "its status has not been resolved yet"
		if ready != nil && ready.Message != "" {
			msg = ready.Message
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q is not ready: %s", ref.Name, msg))
	}
	if ready.ObservedGeneration != nc.Generation {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q changed and its status is being resolved again", ref.Name))
	}
	return nc, nil
}

// resourceTags are the tags of everything launched for a node class (§1.13)
// plus joiner's cluster identity; nodeClaim adds its NodePool.
func (p *Provider) resourceTags(nc *awsv1.EC2NodeClass, nodeClaim *v1.NodeClaim) map[string]string {
	tags := map[string]string{}
	maps.Copy(tags, nc.Spec.Tags)
	tags["kubernetes.io/cluster/"+p.opts.ClusterName] = "owned"
	tags[awsv1.TagEKSClusterName] = p.opts.ClusterName
	tags[v1.LabelAWSEC2NodeClass] = nc.Name
	if p.opts.ClusterID != "" {
		tags[TagClusterID] = p.opts.ClusterID
	}
	if nodeClaim != nil {
		if np := nodeClaim.Labels[v1.LabelNodePool]; np != "" {
			tags[v1.LabelNodePool] = np
		}
	}
	return tags
}

// owns reports whether an instance's tags prove it is this cluster's.
func (p *Provider) owns(tags map[string]string) bool {
	if tags[awsv1.TagEKSClusterName] != p.opts.ClusterName {
		return false
	}
	return p.opts.ClusterID == "" || tags[TagClusterID] == p.opts.ClusterID
}

// reportNamesake logs, once per foreign cluster id, that another cluster
// uses this cluster's name; its instances are left alone.
func (p *Provider) reportNamesake(ctx context.Context, tags map[string]string, instanceID string) {
	other := tags[TagClusterID]
	if p.opts.ClusterID == "" || other == "" || other == p.opts.ClusterID || tags[awsv1.TagEKSClusterName] != p.opts.ClusterName {
		return
	}
	if p.namesakes.Report(ctx, p.opts.ClusterName, p.opts.ClusterID, other, instanceID) {
		p.publishNamesake(ctx, tags, other, instanceID)
	}
}

// publishNamesake says it (seed 004) where users look: a Warning event on
// the node class the foreign instance names when this cluster has one, else
// on every EC2NodeClass.
func (p *Provider) publishNamesake(ctx context.Context, tags map[string]string, other, instanceID string) {
	if p.opts.Recorder == nil {
		return
	}
	var classes awsv1.EC2NodeClassList
	if err := p.kube.List(ctx, &classes); err != nil {
		return
	}
	var targets []*awsv1.EC2NodeClass
	for i := range classes.Items {
		if classes.Items[i].Name == tags[v1.LabelAWSEC2NodeClass] {
			targets = []*awsv1.EC2NodeClass{&classes.Items[i]}
			break
		}
		targets = append(targets, &classes.Items[i])
	}
	for _, nc := range targets {
		p.opts.Recorder.Publish(events.Warning(nc, events.ClusterNamesake, "Garbage collect",
			"Another cluster (id %s) uses this cluster's name %s: its instance %s carries %s=%s. joiner leaves its instances alone, but give the clusters distinct names (CLUSTER_NAME / settings.clusterName): Karpenter, IAM conditions and cost reports that trust the tag mix them up.",
			other, p.opts.ClusterName, instanceID, awsv1.TagEKSClusterName, p.opts.ClusterName))
	}
}
