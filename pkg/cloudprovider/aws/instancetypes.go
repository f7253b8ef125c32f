package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	builtin "github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// instanceTypesTTL is how long discovered instance types and offerings
// are kept (Karpenter: 5 minutes).
const instanceTypesTTL = 5 * time.Minute

// catalog is what DescribeInstanceTypes and DescribeInstanceTypeOfferings
// said at one time.
type catalog struct {
	types   []ec2types.InstanceTypeInfo
	zones   map[string][]string // instance type -> zones offering it
	fetched time.Time
	gen     uint64
}

// instanceTypeCache holds the region's catalog and the instance types
// computed from it per node class configuration.
type instanceTypeCache struct {
	ec2    EC2API
	region string
	clock  clock.PassiveClock

	mu         sync.Mutex
	current    *catalog
	gen        uint64
	refreshing bool
	computed   map[string][]*scheduling.InstanceType
}

func newInstanceTypeCache(e EC2API, region string, c clock.PassiveClock) *instanceTypeCache {
	return &instanceTypeCache{ec2: e, region: region, clock: c, computed: map[string][]*scheduling.InstanceType{}}
}

// get returns the catalog. The first call fetches it (concurrent callers
// wait); afterwards a stale catalog is served while one background fetch
// replaces it, so launches never wait for the region's whole catalog again.
func (c *instanceTypeCache) get(ctx context.Context) (*catalog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil {
		if c.clock.Since(c.current.fetched) >= instanceTypesTTL && !c.refreshing {
			c.refreshing = true
			go c.refresh()
		}
		return c.current, nil
	}
	cat, err := fetchCatalog(ctx, c.ec2)
	if err != nil {
		return nil, err
	}
	c.install(cat)
	return cat, nil
}

// refresh fetches the catalog in the background; a failure keeps the old
// one until the next call tries again.
func (c *instanceTypeCache) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cat, err := fetchCatalog(ctx, c.ec2)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err == nil {
		c.install(cat)
	}
}

// install makes cat current; c.mu is held.
func (c *instanceTypeCache) install(cat *catalog) {
	c.gen++
	cat.gen = c.gen
	cat.fetched = c.clock.Now()
	c.current = cat
	c.computed = map[string][]*scheduling.InstanceType{}
}

// fetchCatalog lists the region's HVM x86_64/arm64 instance types and
// the zones offering each.
func fetchCatalog(ctx context.Context, e EC2API) (*catalog, error) {
	cat := &catalog{zones: map[string][]string{}}
	types := ec2.NewDescribeInstanceTypesPaginator(e, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
		MaxResults: aws.Int32(100),
	})
	for types.HasMorePages() {
		page, err := types.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types: %w", err)
		}
		cat.types = append(cat.types, page.InstanceTypes...)
	}
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(e, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for offerings.HasMorePages() {
		page, err := offerings.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			it := string(o.InstanceType)
			cat.zones[it] = append(cat.zones[it], aws.ToString(o.Location))
		}
	}
	for _, zs := range cat.zones {
		slices.Sort(zs)
	}
	slices.SortFunc(cat.types, func(a, b ec2types.InstanceTypeInfo) int {
		return compareStrings(string(a.InstanceType), string(b.InstanceType))
	})
	return cat, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// instanceTypes returns the instance types a node class may launch, with
// offerings in its subnets' zones, prices and current availability. The
// result is the caller's to modify.
func (p *Provider) instanceTypes(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*scheduling.InstanceType, error) {
	cat, err := p.types.get(ctx)
	if err != nil {
		return nil, err
	}
	p.prices.ensureLoaded(ctx)
	key := cacheKey(cat.gen, p.prices.generation(), nc.AMIFamily(), nc.Spec.Kubelet, nc.Spec.BlockDeviceMappings,
		nc.Spec.InstanceStorePolicy, nc.Status.Subnets, nc.Status.AMIs, nc.Status.CapacityReservations, p.opts.IgnoreReservedCapacity)
	p.types.mu.Lock()
	base, ok := p.types.computed[key]
	p.types.mu.Unlock()
	if !ok {
		base = p.computeInstanceTypes(cat, nc)
		p.types.mu.Lock()
		p.types.computed[key] = base
		p.types.mu.Unlock()
	}
	return p.withAvailability(base, nc), nil
}

// computeInstanceTypes builds the node class's instance types from the
// catalog: capacity, overhead, requirements and priced offerings, all
// available (availability is applied per call).
func (p *Provider) computeInstanceTypes(cat *catalog, nc *awsv1.EC2NodeClass) []*scheduling.InstanceType {
	zones := map[string]string{} // zone -> zone id
	for _, s := range nc.Status.Subnets {
		zones[s.Zone] = s.ZoneID
	}
	archs := map[string]bool{}
	for _, ami := range nc.Status.AMIs {
		for _, r := range ami.Requirements {
			if r.Key == v1.LabelArch {
				for _, v := range r.Values {
					archs[v] = true
				}
			}
		}
	}
	family := nc.AMIFamily()
	volumes := volumesPrice(blockDevices(nc, family))
	out := make([]*scheduling.InstanceType, 0, len(cat.types))
	for i := range cat.types {
		info := &cat.types[i]
		arch := typeArch(info)
		if arch == "" || !compatible(info, family) {
			continue
		}
		// A type of an architecture no selected image is built for stays
		// listed, every offering unavailable with the images named: a pod
		// that only such types could carry is told the cause (seed 000),
		// not "no instance type has an available offering".
		noImage := ""
		if !archs[arch] {
			if len(archs) == 0 {
				continue
			}
			noImage = noImageDetail(nc, arch)
		}
		name := string(info.InstanceType)
		var offerings []scheduling.Offering
		var typeZones, zoneIDs []string
		for _, zone := range cat.zones[name] {
			if _, ok := zones[zone]; !ok {
				continue
			}
			typeZones = append(typeZones, zone)
			if id := zones[zone]; id != "" {
				zoneIDs = append(zoneIDs, id)
			}
			for _, ct := range info.SupportedUsageClasses {
				switch ct {
				case ec2types.UsageClassTypeOnDemand:
					if price, ok := p.prices.onDemandPrice(name); ok {
						offerings = append(offerings, scheduling.Offering{Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true})
					}
				case ec2types.UsageClassTypeSpot:
					if price, ok := p.prices.spotPrice(name, zone); ok {
						offerings = append(offerings, scheduling.Offering{Zone: zone, CapacityType: v1.CapacityTypeSpot, Price: price, Available: true})
					}
				}
			}
		}
		offerings = append(offerings, p.reservedOfferings(name, zones, nc)...)
		if len(offerings) == 0 {
			continue
		}
		if noImage != "" {
			for j := range offerings {
				offerings[j].Available, offerings[j].Unavailable, offerings[j].UnavailableDetail = false, scheduling.UnavailableNoImage, noImage
			}
		}
		it := &scheduling.InstanceType{
			Name:         name,
			Requirements: p.requirements(info, family, arch),
			Offerings:    offerings,
			VolumePrice:  volumes,
		}
		if info.BurstablePerformanceSupported != nil && *info.BurstablePerformanceSupported && info.VCpuInfo != nil {
			it.Burst = builtin.Burst(name, int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus)))
		}
		// Of an architecture the images serve, only types some image can
		// boot: a GPU type needs an NVIDIA variant, as in Karpenter.
		if noImage == "" && !slices.ContainsFunc(nc.Status.AMIs, func(a awsv1.AMI) bool { return amiAdmits(a, it.Requirements) }) {
			continue
		}
		it.Capacity = p.capacity(info, nc, family)
		it.Overhead = overhead(it.Capacity, nc.Spec.Kubelet)
		it.Requirements[v1.LabelTopologyZone] = typeZones
		slices.Sort(zoneIDs)
		it.Requirements[v1.LabelAWSTopologyZoneID] = slices.Compact(zoneIDs)
		var cts []string
		for _, o := range offerings {
			if !slices.Contains(cts, o.CapacityType) {
				cts = append(cts, o.CapacityType)
			}
		}
		slices.Sort(cts)
		it.Requirements[v1.LabelCapacityType] = cts
		out = append(out, it)
	}
	return out
}

// noImageDetail says that nc selects no image of arch, naming the images
// it selects and their architectures.
func noImageDetail(nc *awsv1.EC2NodeClass, arch string) string {
	var images []string
	for _, ami := range nc.Status.AMIs {
		var archs []string
		for _, r := range ami.Requirements {
			if r.Key == v1.LabelArch {
				archs = append(archs, r.Values...)
			}
		}
		name := ami.ID
		if ami.Name != "" {
			name += " (" + ami.Name + ")"
		}
		images = append(images, name+" "+strings.Join(archs, "/"))
	}
	slices.Sort(images)
	return fmt.Sprintf("every image EC2NodeClass %s selects is built for another architecture than %s: %s", nc.Name, arch, strings.Join(images, ", "))
}

// withAvailability copies the computed types, marking offerings the ICE
// cache holds and zones whose subnets are all exhausted unavailable.
func (p *Provider) withAvailability(base []*scheduling.InstanceType, nc *awsv1.EC2NodeClass) []*scheduling.InstanceType {
	usable := map[string]bool{}
	for _, s := range nc.Status.Subnets {
		if _, exhausted := p.exhausted.isExhausted(s.ID); !exhausted {
			usable[s.Zone] = true
		}
	}
	out := make([]*scheduling.InstanceType, len(base))
	for i, it := range base {
		c := *it
		c.Offerings = slices.Clone(it.Offerings)
		for j := range c.Offerings {
			o := &c.Offerings[j]
			if o.Unavailable == scheduling.UnavailableNoImage {
				continue
			}
			ice := p.ice.isUnavailable(o.CapacityType, it.Name, o.Zone)
			full := false
			if o.ReservationID != "" {
				o.ReservationCapacity = p.reserved.available(o.ReservationID)
				full = o.ReservationCapacity == 0
			}
			o.Available = usable[o.Zone] && !ice && !full
			// Say why, so a pod that fits nowhere is told the cause.
			switch {
			case !usable[o.Zone]:
				o.Unavailable = scheduling.UnavailableSubnetExhausted
			case ice:
				o.Unavailable = scheduling.UnavailableInsufficientCapacity
			case full:
				o.Unavailable = scheduling.UnavailableInsufficientCapacity
				o.UnavailableDetail = fmt.Sprintf("capacity reservation %s has no instance left", o.ReservationID)
			}
		}
		out[i] = &c
	}
	return out
}

// compatible filters types an AMI family cannot boot (Karpenter's
// compatibility filters): AL2023 does not support the first-generation
// Graviton a1 family.
func compatible(info *ec2types.InstanceTypeInfo, family string) bool {
	if family == awsv1.AMIFamilyAL2023 && familyOf(string(info.InstanceType)) == "a1" {
		return false
	}
	if awsv1.IsWindows(family) && typeArch(info) != "amd64" {
		return false
	}
	return true
}

// typeArch is the Kubernetes architecture of an instance type.
func typeArch(info *ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo != nil {
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			if arch := kubeArch(string(a)); arch != "" {
				return arch
			}
		}
	}
	return ""
}

// GetInstanceTypes implements cloudprovider.CloudProvider.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error) {
	nc, err := p.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("getting instance types of nodepool %s: %w", nodePool.Name, err)
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("getting instance types of nodepool %s: %w", nodePool.Name, err)
	}
	return its, nil
}

// volumesPrice is what the node's EBS volumes cost per hour (pkg/catalog's EBS
// prices); a mapping without a volume type is EC2's default, gp2, and one
// without a size (the image's own) is not counted.
func volumesPrice(bdms []ec2types.LaunchTemplateBlockDeviceMappingRequest) float64 {
	total := 0.0
	for _, b := range bdms {
		if b.Ebs == nil || b.Ebs.VolumeSize == nil {
			continue
		}
		vt := string(b.Ebs.VolumeType)
		if vt == "" {
			vt = string(ec2types.VolumeTypeGp2)
		}
		if price, ok := builtin.VolumePrice(vt, int64(*b.Ebs.VolumeSize)); ok {
			total += price
		}
	}
	return total
}
