package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/apis/status"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// ReasonPlacementGroupNotFound is the PlacementGroupReady reason when the
// selector matches no available placement group.
const ReasonPlacementGroupNotFound = "PlacementGroupNotFound"

// placementGroupInfo is a resolved placement group.
type placementGroupInfo struct {
	Name, ID, Strategy string
	Partitions         int32
}

// placementGroup resolves spec.placementGroupSelector (nil when unset):
// the group must exist and be available. Cached for a minute.
func (p *Provider) placementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (*placementGroupInfo, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	key := cacheKey("placementgroup", sel)
	if v, ok := p.cache.Get(key); ok {
		return v.(*placementGroupInfo), nil
	}
	in := &ec2.DescribePlacementGroupsInput{}
	field := "name " + sel.Name
	if sel.ID != "" {
		in.GroupIds, field = []string{sel.ID}, "id "+sel.ID
	} else {
		in.GroupNames = []string{sel.Name}
	}
	out, err := p.ec2.DescribePlacementGroups(ctx, in)
	switch code := errorCode(err); {
	case code == "InvalidPlacementGroup.Unknown" || code == "InvalidPlacementGroupId.NotFound" || (err == nil && len(out.PlacementGroups) == 0):
		return nil, badInput("spec.placementGroupSelector: no placement group with %s exists in %s; create it (aws ec2 create-placement-group) or fix the selector", field, p.opts.Region)
	case err != nil:
		return nil, fmt.Errorf("describing placement group %s of spec.placementGroupSelector: %w", field, err)
	}
	g := out.PlacementGroups[0]
	if g.State != ec2types.PlacementGroupStateAvailable {
		return nil, badInput("spec.placementGroupSelector: placement group %s is %s, not available", aws.ToString(g.GroupName), g.State)
	}
	info := &placementGroupInfo{Name: aws.ToString(g.GroupName), ID: aws.ToString(g.GroupId), Strategy: string(g.Strategy), Partitions: aws.ToInt32(g.PartitionCount)}
	p.cache.Set(key, info, defaultCacheTTL)
	return info, nil
}

// resolvePlacement fills status.capacityReservations and the
// CapacityReservationsReady and PlacementGroupReady conditions, each only
// when its field is set (Ready rolls them up only then). With the
// ReservedCapacity gate off, reservations are not resolved and the
// condition is True, as in Karpenter.
func (p *Provider) resolvePlacement(ctx context.Context, nc *awsv1.EC2NodeClass, conds status.ConditionSet, fail func(cond, reason string, err error)) {
	nc.Status.CapacityReservations = nil
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		if p.opts.IgnoreReservedCapacity {
			conds.SetTrue(awsv1.ConditionTypeCapacityReservationsReady)
		} else if rs, err := p.capacityReservations(ctx, nc); err != nil {
			fail(awsv1.ConditionTypeCapacityReservationsReady, ReasonCapacityReservationsNotFound, err)
		} else {
			nc.Status.CapacityReservations = rs
			conds.SetTrue(awsv1.ConditionTypeCapacityReservationsReady)
		}
	}
	if nc.Spec.PlacementGroupSelector != nil {
		if _, err := p.placementGroup(ctx, nc); err != nil {
			fail(awsv1.ConditionTypePlacementGroupReady, ReasonPlacementGroupNotFound, err)
		} else {
			conds.SetTrue(awsv1.ConditionTypePlacementGroupReady)
		}
	}
}

// placeTemplate sets where a launch template's instances land: the
// capacity reservation a reserved launch targets (a capacity block's
// market type too), preference none for the other launches of a node
// class that selects reservations, and the node class's placement group.
func (p *Provider) placeTemplate(ctx context.Context, spec *templateSpec, nc *awsv1.EC2NodeClass, reservation string) error {
	if reservation != "" {
		spec.CapacityReservation = reservation
		if r, ok := reservationOf(nc, reservation); ok && r.ReservationType == awsv1.CapacityReservationTypeCapacityBlock {
			spec.CapacityBlock = true
		}
	} else if len(nc.Status.CapacityReservations) > 0 {
		spec.NoOpenReservations = true
	}
	pg, err := p.placementGroup(ctx, nc)
	if err != nil {
		return fmt.Errorf("resolving the placement group of EC2NodeClass %s: %w", nc.Name, err)
	}
	if pg != nil {
		spec.PlacementGroup = pg.Name
	}
	return nil
}

// placementLabels adds what EC2 says about where inst landed: capacity
// type reserved with the reservation's id and type when it runs in a
// capacity reservation, and its placement group's id and partition.
func placementLabels(labels map[string]string, inst *ec2types.Instance) {
	if id := aws.ToString(inst.CapacityReservationId); id != "" && inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
		labels[v1.LabelAWSCapacityReservationID] = id
		labels[v1.LabelAWSCapacityReservationType] = string(awsv1.CapacityReservationTypeDefault)
		if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeCapacityBlock {
			labels[v1.LabelAWSCapacityReservationType] = string(awsv1.CapacityReservationTypeCapacityBlock)
		}
	}
	if pl := inst.Placement; pl != nil {
		if id := aws.ToString(pl.GroupId); id != "" {
			labels[v1.LabelAWSPlacementGroupID] = id
		}
		if n := aws.ToInt32(pl.PartitionNumber); n > 0 {
			labels[v1.LabelAWSPlacementGroupPartition] = fmt.Sprint(n)
		}
	}
}
