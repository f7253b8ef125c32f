package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// liveStates are the instance states List and Get report (Karpenter's).
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

func providerID(zone, id string) string { return fmt.Sprintf("aws:///%s/%s", zone, id) }

// parseProviderID returns the instance id of aws:///<zone>/<id>.
func parseProviderID(pid string) (string, error) {
	rest, ok := strings.CutPrefix(pid, "aws:///")
	if !ok {
		return "", fmt.Errorf("provider id %q is not aws:///<zone>/<instance-id>", pid)
	}
	_, id, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider id %q is not aws:///<zone>/<instance-id>", pid)
	}
	return id, nil
}

// instanceIndex remembers which instance each NodeClaim UID launched, so a
// repeated Create returns it instead of launching again. It is primed once
// from List, so a restarted controller knows the launches of the last one.
type instanceIndex struct {
	mu     sync.Mutex
	primed bool
	byUID  map[types.UID]*v1.NodeClaim
}

func newInstanceIndex() *instanceIndex { return &instanceIndex{byUID: map[types.UID]*v1.NodeClaim{}} }

func (x *instanceIndex) remember(uid types.UID, nc *v1.NodeClaim) {
	if uid == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.byUID[uid] = nc.DeepCopy()
}

func (x *instanceIndex) forget(providerID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for uid, nc := range x.byUID {
		if nc.Status.ProviderID == providerID {
			delete(x.byUID, uid)
		}
	}
}

// launchedFor returns the live instance already launched for nodeClaim's
// UID, or nil.
func (p *Provider) launchedFor(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	if nodeClaim.UID == "" {
		return nil, nil
	}
	p.instances.mu.Lock()
	primed := p.instances.primed
	p.instances.mu.Unlock()
	if !primed {
		if _, err := p.List(ctx); err != nil {
			return nil, fmt.Errorf("looking up earlier launches: %w", err)
		}
	}
	p.instances.mu.Lock()
	defer p.instances.mu.Unlock()
	if nc, ok := p.instances.byUID[nodeClaim.UID]; ok {
		return nc.DeepCopy(), nil
	}
	return nil, nil
}

func tagMap(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// describe returns this cluster's live instances matching in.
// describe returns the live instances in matches; foreign (not this
// cluster's) instances only when keepForeign, for callers that must tell
// "not ours" from "gone".
func (p *Provider) describe(ctx context.Context, in *ec2.DescribeInstancesInput, keepForeign bool) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			if strings.HasPrefix(errorCode(err), "InvalidInstanceID") {
				return nil, nil
			}
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				if inst.State == nil || !contains(liveStates, string(inst.State.Name)) {
					continue
				}
				tags := tagMap(inst.Tags)
				if !p.owns(tags) {
					p.reportNamesake(ctx, tags, aws.ToString(inst.InstanceId))
					if !keepForeign {
						continue
					}
				}
				out = append(out, inst)
			}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// describeOne returns this cluster's live instance id, or nil; concurrent
// calls share one DescribeInstances. A live instance without this
// cluster's identity is a NodeClaimNotOwnedError: it exists, so callers
// must not treat it as gone, and it is not ours to act on.
func (p *Provider) describeOne(ctx context.Context, id string) (*ec2types.Instance, error) {
	inst, found, err := p.describeBatch.do(ctx, id)
	if err != nil || !found {
		return nil, err
	}
	if tags := tagMap(inst.Tags); !p.owns(tags) {
		return nil, cloudprovider.NewNodeClaimNotOwnedError(fmt.Errorf("instance %s lacks this cluster's identity tags %s=%s %s=%s (it has %s=%q %s=%q)",
			id, awsv1.TagEKSClusterName, p.opts.ClusterName, TagClusterID, p.opts.ClusterID,
			awsv1.TagEKSClusterName, tags[awsv1.TagEKSClusterName], TagClusterID, tags[TagClusterID]))
	}
	return &inst, nil
}

// describeInstances is the DescribeInstances batch call: an instance-id
// filter rather than InstanceIds, so one unknown id does not fail the rest.
func (p *Provider) describeInstances(ctx context.Context, ids []string) (map[string]ec2types.Instance, error) {
	insts, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}}, true)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ec2types.Instance, len(insts))
	for _, inst := range insts {
		out[aws.ToString(inst.InstanceId)] = inst
	}
	return out, nil
}

// terminateInstances is the TerminateInstances batch call; when the batch
// fails (one id already gone fails them all), each id is tried alone.
func (p *Provider) terminateInstances(ctx context.Context, ids []string) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err == nil {
		for _, id := range ids {
			out[id] = struct{}{}
		}
		return out, nil
	} else if len(ids) == 1 {
		if strings.HasPrefix(errorCode(err), "InvalidInstanceID") {
			return out, nil
		}
		return nil, err
	}
	var errs []error
	for _, id := range ids {
		if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err == nil {
			out[id] = struct{}{}
		} else if !strings.HasPrefix(errorCode(err), "InvalidInstanceID") {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Get implements cloudprovider.CloudProvider.
func (p *Provider) Get(ctx context.Context, pid string) (*v1.NodeClaim, error) {
	id, err := parseProviderID(pid)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.describeOne(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("getting instance %s: %w", id, err)
	}
	if inst == nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of cluster %s not found", id, p.opts.ClusterName))
	}
	return p.hydrate(ctx, inst), nil
}

// List implements cloudprovider.CloudProvider: one filtered
// DescribeInstances (cluster name tag, live states); the cluster id tag
// is checked on each instance.
func (p *Provider) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	insts, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{p.opts.ClusterName}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}}, false)
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	out := make([]*v1.NodeClaim, 0, len(insts))
	for i := range insts {
		nc := p.hydrate(ctx, &insts[i])
		out = append(out, nc)
		p.instances.remember(nc.UID, nc)
	}
	// Primed only once every launch is remembered: a Create that sees the
	// index primed trusts a miss and launches.
	p.instances.mu.Lock()
	p.instances.primed = true
	p.instances.mu.Unlock()
	return out, nil
}

// Delete implements cloudprovider.CloudProvider.
func (p *Provider) Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error {
	pid := nodeClaim.Status.ProviderID
	id, err := parseProviderID(pid)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.describeOne(ctx, id)
	if err != nil {
		return fmt.Errorf("terminating instance %s of nodeclaim %s: %w", id, nodeClaim.Name, err)
	}
	if inst == nil {
		p.instances.forget(pid)
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s of cluster %s not found", id, p.opts.ClusterName))
	}
	if inst.State.Name == ec2types.InstanceStateNameShuttingDown {
		return nil
	}
	if _, found, err := p.terminateBatch.do(ctx, id); err != nil {
		return fmt.Errorf("terminating instance %s of nodeclaim %s: %w", id, nodeClaim.Name, err)
	} else if !found {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	if r := aws.ToString(inst.CapacityReservationId); r != "" {
		p.reserved.terminated(r)
	}
	return nil
}

// hydrate turns an instance into the NodeClaim the interface promises.
func (p *Provider) hydrate(ctx context.Context, inst *ec2types.Instance) *v1.NodeClaim {
	tags := tagMap(inst.Tags)
	zone := ""
	if inst.Placement != nil {
		zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	labels := map[string]string{
		v1.LabelInstanceType:   string(inst.InstanceType),
		v1.LabelTopologyZone:   zone,
		v1.LabelTopologyRegion: p.opts.Region,
		v1.LabelCapacityType:   v1.CapacityTypeOnDemand,
		v1.LabelOS:             "linux",
	}
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		labels[v1.LabelCapacityType] = v1.CapacityTypeSpot
	}
	placementLabels(labels, inst)
	if arch := kubeArch(string(inst.Architecture)); arch != "" {
		labels[v1.LabelArch] = arch
	}
	if inst.Platform == ec2types.PlatformValuesWindows {
		labels[v1.LabelOS] = "windows"
	}
	for _, k := range []string{v1.LabelNodePool, v1.LabelAWSEC2NodeClass} {
		if v := tags[k]; v != "" {
			labels[k] = v
		}
	}
	out := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              tags[awsv1.TagNodeClaim],
			UID:               types.UID(tags[TagNodeClaimUID]),
			Labels:            labels,
			CreationTimestamp: metav1.NewTime(aws.ToTime(inst.LaunchTime)),
		},
		Status: v1.NodeClaimStatus{
			ProviderID: providerID(zone, aws.ToString(inst.InstanceId)),
			ImageID:    aws.ToString(inst.ImageId),
		},
	}
	if cat, err := p.types.get(ctx); err == nil {
		for i := range cat.types {
			if cat.types[i].InstanceType == inst.InstanceType {
				nc := &awsv1.EC2NodeClass{}
				_ = p.kube.Get(ctx, types.NamespacedName{Name: tags[v1.LabelAWSEC2NodeClass]}, nc)
				family := nc.AMIFamily()
				capacity := p.capacity(&cat.types[i], nc, family)
				out.Status.Capacity = capacity
				it := schedulingType(capacity, nc)
				out.Status.Allocatable = it.Allocatable()
				break
			}
		}
	}
	return out
}
