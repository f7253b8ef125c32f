package aws

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// reservedPriceDivisor makes a reserved offering nearly free (the
// reservation is paid for whether it is used or not) while keeping the
// on-demand price order between reserved types, as Karpenter prices them.
const reservedPriceDivisor = 10_000_000.0

// capacityBlockDrainBefore is how long before a capacity block ends its
// reservation stops being offered and is reported expiring: EC2 reclaims
// the instances 30 minutes before the end, and Karpenter starts 10
// minutes earlier so they can drain.
const capacityBlockDrainBefore = 40 * time.Minute

// ReasonCapacityReservationsNotFound is the CapacityReservationsReady
// reason when a term names a reservation EC2 does not know.
const ReasonCapacityReservationsNotFound = "CapacityReservationsNotFound"

// reservationAvailability is how many more instances each capacity
// reservation can launch: what DescribeCapacityReservations said, less the
// launches since (a launch uses the room at once, the next describe is a
// minute away), plus the reserved instances terminated since.
type reservationAvailability struct {
	mu        sync.Mutex
	described map[string]int
	delta     map[string]int
}

func newReservationAvailability() *reservationAvailability {
	return &reservationAvailability{described: map[string]int{}, delta: map[string]int{}}
}

// observe records what EC2 said; launches and terminations before it are
// in the count.
func (a *reservationAvailability) observe(id string, available int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.described[id] = available
	delete(a.delta, id)
}

func (a *reservationAvailability) launched(id string)   { a.add(id, -1) }
func (a *reservationAvailability) terminated(id string) { a.add(id, 1) }

func (a *reservationAvailability) add(id string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.described[id]; ok {
		a.delta[id] += n
	}
}

// available is the room left in reservation id (0 when unknown).
func (a *reservationAvailability) available(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(0, a.described[id]+a.delta[id])
}

// capacityReservations resolves the capacity reservation selector terms
// (ORed): an id term by id, a tags term by tag filters narrowed by ownerID
// and instanceMatchCriteria; only active reservations that have not ended
// count. Results are cached for a minute, and each describe refreshes the
// reservations' availability.
func (p *Provider) capacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	key := cacheKey("capacityreservations", nc.Spec.CapacityReservationSelectorTerms)
	if v, ok := p.cache.Get(key); ok {
		return p.withReservationState(v.([]ec2types.CapacityReservation)), nil
	}
	seen := map[string]bool{}
	var found []ec2types.CapacityReservation
	for i, term := range nc.Spec.CapacityReservationSelectorTerms {
		in := &ec2.DescribeCapacityReservationsInput{}
		switch {
		case term.ID != "":
			in.CapacityReservationIds = []string{term.ID}
		default:
			in.Filters = append(tagFilters(term.Tags), ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}})
			if term.OwnerID != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{term.OwnerID}})
			}
			if term.InstanceMatchCriteria != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{term.InstanceMatchCriteria}})
			}
		}
		pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				if term.ID != "" && errorCode(err) == "InvalidCapacityReservationId.NotFound" {
					return nil, badInput("spec.capacityReservationSelectorTerms[%d].id: capacity reservation %s does not exist in %s; fix the id or remove the term", i, term.ID, p.opts.Region)
				}
				return nil, fmt.Errorf("describing capacity reservations of spec.capacityReservationSelectorTerms[%d]: %w", i, err)
			}
			for _, r := range page.CapacityReservations {
				id := aws.ToString(r.CapacityReservationId)
				if seen[id] || r.State != ec2types.CapacityReservationStateActive {
					continue
				}
				seen[id] = true
				found = append(found, r)
				p.reserved.observe(id, int(aws.ToInt32(r.AvailableInstanceCount)))
			}
		}
	}
	slices.SortFunc(found, func(a, b ec2types.CapacityReservation) int {
		return cmp.Compare(aws.ToString(a.CapacityReservationId), aws.ToString(b.CapacityReservationId))
	})
	p.cache.Set(key, found, defaultCacheTTL)
	return p.withReservationState(found), nil
}

// withReservationState renders reservations as status.capacityReservations,
// leaving out those that have ended; a capacity block within
// capacityBlockDrainBefore of its end is expiring.
func (p *Provider) withReservationState(rs []ec2types.CapacityReservation) []awsv1.CapacityReservation {
	now := p.clock.Now()
	var out []awsv1.CapacityReservation
	for _, r := range rs {
		if r.EndDate != nil && !r.EndDate.After(now) {
			continue
		}
		cr := awsv1.CapacityReservation{
			ID:                    aws.ToString(r.CapacityReservationId),
			AvailabilityZone:      aws.ToString(r.AvailabilityZone),
			InstanceType:          aws.ToString(r.InstanceType),
			OwnerID:               aws.ToString(r.OwnerId),
			InstanceMatchCriteria: string(r.InstanceMatchCriteria),
			ReservationType:       awsv1.CapacityReservationTypeDefault,
			State:                 awsv1.CapacityReservationStateActive,
			Interruptible:         aws.ToBool(r.Interruptible),
		}
		if r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
			cr.ReservationType = awsv1.CapacityReservationTypeCapacityBlock
		}
		if r.EndDate != nil {
			end := metav1.NewTime(*r.EndDate)
			cr.EndTime = &end
			if cr.ReservationType == awsv1.CapacityReservationTypeCapacityBlock && r.EndDate.Sub(now) <= capacityBlockDrainBefore {
				cr.State = awsv1.CapacityReservationStateExpiring
			}
		}
		out = append(out, cr)
	}
	return out
}

// reservationOf is the node class's resolved reservation id.
func reservationOf(nc *awsv1.EC2NodeClass, id string) (awsv1.CapacityReservation, bool) {
	i := slices.IndexFunc(nc.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == id })
	if i < 0 {
		return awsv1.CapacityReservation{}, false
	}
	return nc.Status.CapacityReservations[i], true
}

// reservedOfferings are instance type name's offerings in the node
// class's capacity reservations: one per active reservation of the type
// in a zone of the node class's subnets, priced as Karpenter prices them
// (the on-demand price over reservedPriceDivisor). How much room each has
// is applied per listing (withAvailability); an expiring capacity block is
// not offered.
func (p *Provider) reservedOfferings(name string, zones map[string]string, nc *awsv1.EC2NodeClass) []scheduling.Offering {
	if p.opts.IgnoreReservedCapacity {
		return nil
	}
	var out []scheduling.Offering
	for _, r := range nc.Status.CapacityReservations {
		if r.InstanceType != name || r.State == awsv1.CapacityReservationStateExpiring {
			continue
		}
		if _, ok := zones[r.AvailabilityZone]; !ok {
			continue
		}
		price, _ := p.prices.onDemandPrice(name)
		out = append(out, scheduling.Offering{
			Zone: r.AvailabilityZone, CapacityType: v1.CapacityTypeReserved, Price: price / reservedPriceDivisor,
			Available: true, ReservationID: r.ID,
		})
	}
	return out
}

// reservationLabels adds the labels of an instance launched into
// reservation id (none when id is empty): capacity type reserved, the
// reservation's id and type, as Karpenter labels them.
func reservationLabels(labels map[string]string, nc *awsv1.EC2NodeClass, id string) {
	if id == "" {
		return
	}
	labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
	labels[v1.LabelAWSCapacityReservationID] = id
	rtype := awsv1.CapacityReservationTypeDefault
	if r, ok := reservationOf(nc, id); ok && r.ReservationType != "" {
		rtype = r.ReservationType
	}
	labels[v1.LabelAWSCapacityReservationType] = string(rtype)
}
