package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

var _ cloudprovider.GroupLauncher = (*Provider)(nil)

// CreateGroup implements cloudprovider.GroupLauncher with one CreateFleet of
// type instant whose MinTargetCapacity is the group's size, with
// SingleInstanceType and SingleAvailabilityZone: EC2 launches every
// instance, of one type in one zone, or none and answers with its capacity
// error. The overrides are the instance types every NodeClaim allows
// (cheapest first, at most maxFleetTypes, one capacity type) in each zone's
// subnet with the most free addresses, so EC2 picks where the whole group
// fits. The NodeClaims must share a NodePool and node class (one launch
// template serves them); otherwise, or when no type suits them all, it
// returns a plain error and the caller launches them one by one.
func (p *Provider) CreateGroup(ctx context.Context, nodeClaims []*v1.NodeClaim) error {
	if len(nodeClaims) == 0 {
		return nil
	}
	first := nodeClaims[0]
	for _, claim := range nodeClaims[1:] {
		if claim.Spec.NodeClassRef == nil || first.Spec.NodeClassRef == nil || *claim.Spec.NodeClassRef != *first.Spec.NodeClassRef ||
			claim.Labels[v1.LabelNodePool] != first.Labels[v1.LabelNodePool] {
			return errors.New("the nodeclaims come from different nodepools or node classes, so one launch template cannot serve them")
		}
	}
	nc, err := p.nodeClass(ctx, first.Spec.NodeClassRef)
	if err != nil {
		return fmt.Errorf("launching group: %w", err)
	}
	var todo []*v1.NodeClaim
	for _, claim := range nodeClaims {
		existing, err := p.launchedFor(ctx, claim)
		if err != nil {
			return fmt.Errorf("launching group: %w", err)
		}
		if existing == nil {
			todo = append(todo, claim)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return fmt.Errorf("launching group: %w", err)
	}
	cands := commonCandidates(its, todo)
	if len(cands) == 0 {
		return fmt.Errorf("no available offering of EC2NodeClass %s is allowed by all %d nodeclaims of the group", nc.Name, len(todo))
	}
	cands = chooseCapacityType(withoutExotic(cands, first))
	capacityType := cands[0].Offering.CapacityType
	subnets, err := p.subnets(ctx, nc, false)
	if err != nil {
		return fmt.Errorf("launching group: resolving subnets: %w", err)
	}
	best := p.bestSubnets(subnets)
	// One launch template per AMI and max-pods, as Create builds them.
	groups := map[string]*templateGroup{}
	var order []string
	byType := map[string]*scheduling.InstanceType{}
	for _, c := range cands {
		it := c.InstanceType
		if _, seen := byType[it.Name]; seen || len(byType) == maxFleetTypes {
			continue
		}
		byType[it.Name] = it
		ami := amiFor(nc, it)
		if ami == "" {
			continue
		}
		key := fmt.Sprintf("%s/%d", ami, it.Capacity.Pods().Value())
		if groups[key] == nil {
			groups[key] = &templateGroup{ami: ami, maxPods: int32(it.Capacity.Pods().Value())}
			order = append(order, key)
		}
		groups[key].types = append(groups[key].types, it)
	}
	tags := p.resourceTags(nc, first)
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, key := range order {
		g := groups[key]
		lt, err := p.ensureTemplate(ctx, first, nc, g, tags)
		if err != nil {
			return fmt.Errorf("launching group: %w", err)
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
			LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")}}
		for _, c := range cands {
			s, ok := best[c.Offering.Zone]
			if !ok || !slices.Contains(g.types, c.InstanceType) {
				continue
			}
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(c.InstanceType.Name), SubnetId: aws.String(s.ID)})
		}
		if len(cfg.Overrides) > 0 {
			configs = append(configs, cfg)
		}
	}
	if len(configs) == 0 {
		return fmt.Errorf("no subnet or AMI of EC2NodeClass %s serves the instance types the group allows", nc.Name)
	}
	n := aws.Int32(int32(len(todo)))
	in := &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		LaunchTemplateConfigs:       configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: n, DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType)},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags(tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2Tags(tags)},
		},
		Context: nc.Spec.Context,
	}
	if capacityType == v1.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized,
			MinTargetCapacity: n, SingleInstanceType: aws.Bool(true), SingleAvailabilityZone: aws.Bool(true)}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice,
			MinTargetCapacity: n, SingleInstanceType: aws.Bool(true), SingleAvailabilityZone: aws.Bool(true)}
	}
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		return fmt.Errorf("launching group: creating fleet: %w", err)
	}
	var launched []fleetInstance
	for _, fi := range out.Instances {
		typ, subnet := string(fi.InstanceType), ""
		if o := fi.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			typ, subnet = string(o.Overrides.InstanceType), aws.ToString(o.Overrides.SubnetId)
		}
		for _, id := range fi.InstanceIds {
			launched = append(launched, fleetInstance{ID: id, InstanceType: typ, SubnetID: subnet, Lifecycle: string(fi.Lifecycle)})
		}
	}
	if len(launched) < len(todo) {
		// EC2 keeps MinTargetCapacity; should a partial group come back
		// anyway, it is not left running.
		p.terminateAll(ctx, launched)
		return groupFleetError(out.Errors, len(launched), len(todo))
	}
	zoneOf := map[string]string{}
	for _, s := range subnets {
		zoneOf[s.ID] = s.Zone
	}
	var errs []error
	for i, claim := range todo {
		inst := launched[i]
		c := offering.Candidate{InstanceType: byType[inst.InstanceType], Offering: scheduling.Offering{Zone: zoneOf[inst.SubnetID], CapacityType: capacityType}}
		for _, cand := range cands {
			if cand.InstanceType.Name == inst.InstanceType && cand.Offering.Zone == zoneOf[inst.SubnetID] {
				c = cand
			}
		}
		p.instances.remember(claim.UID, p.hydrateLaunch(claim, nc, &inst, c))
		if err := p.tagNodeClaim(ctx, inst.ID, claim); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("launching group: %w", err)
	}
	return nil
}

// groupFleetError is the error of a group fleet that did not launch
// whole. EC2's capacity error for the group means the region cannot give
// that many at once, not that the offering has no capacity: unlike
// Create's, it marks no offering unavailable, so single launches go on.
func groupFleetError(errs []ec2types.CreateFleetError, launched, want int) error {
	var msgs []string
	ice, other := false, ""
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		typ := ""
		if o := e.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			typ = string(o.Overrides.InstanceType) + " in " + aws.ToString(o.Overrides.SubnetId) + ": "
		}
		msgs = append(msgs, typ+code)
		if iceCodes[code] {
			ice = true
		} else if other == "" {
			other = code
		}
	}
	slices.Sort(msgs)
	msgs = slices.Compact(msgs)
	what := "nothing"
	if launched > 0 {
		what = fmt.Sprintf("only %d instances, terminated", launched)
	}
	err := fmt.Errorf("CreateFleet with MinTargetCapacity %d launched %s: %s", want, what, strings.Join(msgs, "; "))
	if ice || other == "" {
		return cloudprovider.NewInsufficientCapacityError(err)
	}
	return cloudprovider.NewCreateError(err, other, err.Error())
}

// bestSubnets is, per zone, the subnet with the most free addresses that
// is not marked exhausted: where a launch in that zone goes.
func (p *Provider) bestSubnets(subnets []subnetInfo) map[string]subnetInfo {
	best := map[string]subnetInfo{}
	for _, s := range subnets {
		if _, ex := p.exhausted.isExhausted(s.ID); ex {
			continue
		}
		if b, ok := best[s.Zone]; !ok || s.AvailableIPs > b.AvailableIPs {
			best[s.Zone] = s
		}
	}
	return best
}

// commonCandidates are the offerings every NodeClaim allows, in the first
// NodeClaim's order (cheapest first).
func commonCandidates(its []*scheduling.InstanceType, claims []*v1.NodeClaim) []offering.Candidate {
	out := offering.Candidates(its, claims[0].Spec.Requirements, claims[0].Spec.Resources.Requests)
	for _, claim := range claims[1:] {
		allowed := map[string]bool{}
		for _, c := range offering.Candidates(its, claim.Spec.Requirements, claim.Spec.Resources.Requests) {
			allowed[c.String()] = true
		}
		out = slices.DeleteFunc(out, func(c offering.Candidate) bool { return !allowed[c.String()] })
	}
	slices.SortStableFunc(out, func(a, b offering.Candidate) int { return cmp.Compare(a.Offering.Price, b.Offering.Price) })
	return out
}

// terminateAll terminates instances of a group that could not launch
// whole.
func (p *Provider) terminateAll(ctx context.Context, insts []fleetInstance) {
	if len(insts) == 0 {
		return
	}
	ids := make([]string, len(insts))
	for i, inst := range insts {
		ids[i] = inst.ID
	}
	_, _ = p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
}
