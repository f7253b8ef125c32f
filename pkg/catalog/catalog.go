package catalog

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Defaults.
const (
	// DefaultRegion is the region of DefaultZones.
	DefaultRegion = "us-east-1"
	// DefaultMaxPods caps the ENI-limited pod count, as EKS does for nodes
	// that do not set kubelet maxPods.
	DefaultMaxPods = 110
	// RootVolumeGiB is the root volume every node boots with (gp3, priced
	// by VolumePrice); it is the node's ephemeral-storage capacity.
	RootVolumeGiB = 20
)

// DefaultZones are the zones offered when Options names none.
var DefaultZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// Options shapes a catalog.
type Options struct {
	// Zones offer every instance type; DefaultZones when empty.
	Zones []string
	// Families keeps only these families (for example "m5", "c6g"); all
	// when empty. Unknown families are an error.
	Families []string
	// MaxPods, when positive, is every node's pod capacity (kubelet
	// maxPods). Otherwise pods come from the ENI formula, capped at
	// DefaultMaxPods unless UncappedENIPods is set.
	MaxPods int32
	// UncappedENIPods uses the ENI formula without the 110 cap.
	UncappedENIPods bool
	// WithoutSpot offers on-demand capacity only.
	WithoutSpot bool
}

// Catalog is a built catalog: immutable instance types in a stable order.
type Catalog struct {
	types  []*scheduling.InstanceType
	byName map[string]*scheduling.InstanceType
}

// Default builds the AWS-like catalog. The result is deterministic: the
// same Options give the same types, prices and order (families in catalog
// order, sizes smallest first).
func Default(opts Options) (*Catalog, error) {
	zones := opts.Zones
	if len(zones) == 0 {
		zones = DefaultZones
	}
	for i, z := range zones {
		if z == "" {
			return nil, fmt.Errorf("zones[%d]: must not be empty", i)
		}
		if slices.Contains(zones[:i], z) {
			return nil, fmt.Errorf("zones[%d]: duplicate zone %q", i, z)
		}
	}
	if opts.MaxPods < 0 {
		return nil, fmt.Errorf("maxPods: must be >= 0, got %d", opts.MaxPods)
	}
	for i, f := range opts.Families {
		if !slices.ContainsFunc(families, func(fam family) bool { return fam.name == f }) {
			return nil, fmt.Errorf("families[%d]: unknown instance family %q (known: %s)", i, f, strings.Join(Families(), ", "))
		}
	}
	c := &Catalog{byName: map[string]*scheduling.InstanceType{}}
	for fi := range families {
		f := &families[fi]
		if len(opts.Families) > 0 && !slices.Contains(opts.Families, f.name) {
			continue
		}
		for si := range f.sizes {
			it := build(f, &f.sizes[si], zones, opts)
			c.types = append(c.types, it)
			c.byName[it.Name] = it
		}
	}
	return c, nil
}

// InstanceTypes lists the catalog's instance types. Callers must not
// mutate them.
func (c *Catalog) InstanceTypes() []*scheduling.InstanceType { return c.types }

// Get returns the named instance type (for example "m5.large").
func (c *Catalog) Get(name string) (*scheduling.InstanceType, bool) {
	it, ok := c.byName[name]
	return it, ok
}

// Families lists the catalog's instance families, in catalog order.
func Families() []string {
	out := make([]string, 0, len(families))
	for _, f := range families {
		out = append(out, f.name)
	}
	return out
}

func build(f *family, s *size, zones []string, opts Options) *scheduling.InstanceType {
	name := f.name + "." + s.name
	pods := maxPods(name, s.name, opts)
	memory := resource.NewQuantity(s.memoryMiB*1024*1024, resource.BinarySI)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.vcpu, resource.DecimalSI),
		corev1.ResourceMemory:           *memory,
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse(strconv.Itoa(RootVolumeGiB) + "Gi"),
	}
	if f.gpu != nil {
		capacity[corev1.ResourceName(f.gpu.resource)] = *resource.NewQuantity(s.gpus, resource.DecimalSI)
	}
	osValues := []string{"linux"}
	if f.arch == "amd64" {
		osValues = []string{"linux", "windows"}
	}
	category, generation := splitFamily(f.name)
	reqs := map[string][]string{
		corev1.LabelInstanceTypeStable:      {name},
		corev1.LabelArchStable:              {f.arch},
		corev1.LabelOSStable:                osValues,
		corev1.LabelTopologyZone:            slices.Sorted(slices.Values(zones)),
		v1.LabelAWSInstanceCategory:         {category},
		v1.LabelAWSInstanceFamily:           {f.name},
		v1.LabelAWSInstanceGeneration:       {generation},
		v1.LabelAWSInstanceSize:             {s.name},
		v1.LabelAWSInstanceCPU:              {strconv.FormatInt(s.vcpu, 10)},
		v1.LabelAWSInstanceCPUManufacturer:  {f.manufacturer},
		v1.LabelAWSInstanceMemory:           {strconv.FormatInt(s.memoryMiB, 10)},
		v1.LabelAWSInstanceHypervisor:       {f.hypervisor},
		v1.LabelAWSInstanceNetworkBandwidth: {strconv.FormatInt(networkBandwidth[s.name], 10)},
		// Keys the type has no value for are listed empty, so NotIn and
		// DoesNotExist selectors on them match and In selectors do not.
		v1.LabelAWSInstanceGPUName:         {},
		v1.LabelAWSInstanceGPUManufacturer: {},
		v1.LabelAWSInstanceGPUCount:        {},
		v1.LabelAWSInstanceGPUMemory:       {},
		v1.LabelAWSInstanceLocalNVMe:       {},
	}
	if f.gpu != nil {
		reqs[v1.LabelAWSInstanceGPUName] = []string{f.gpu.name}
		reqs[v1.LabelAWSInstanceGPUManufacturer] = []string{f.gpu.manufacturer}
		reqs[v1.LabelAWSInstanceGPUCount] = []string{strconv.FormatInt(s.gpus, 10)}
		reqs[v1.LabelAWSInstanceGPUMemory] = []string{strconv.FormatInt(f.gpu.memoryMiB, 10)}
	}
	if s.nvmeGiB > 0 {
		reqs[v1.LabelAWSInstanceLocalNVMe] = []string{strconv.FormatInt(s.nvmeGiB, 10)}
	}
	capacityTypes := []string{v1.CapacityTypeOnDemand}
	if !opts.WithoutSpot {
		capacityTypes = []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot}
	}
	reqs[v1.LabelCapacityType] = capacityTypes

	offerings := make([]scheduling.Offering, 0, len(zones)*len(capacityTypes))
	for _, ct := range capacityTypes {
		for _, z := range zones {
			price := s.price
			if ct == v1.CapacityTypeSpot {
				price = spotPrice(f, name, z, s.price)
			}
			offerings = append(offerings, scheduling.Offering{Zone: z, CapacityType: ct, Price: price, Available: true})
		}
	}
	rootVolume, _ := VolumePrice(DefaultVolumeType, RootVolumeGiB)
	return &scheduling.InstanceType{
		Name:         name,
		Requirements: reqs,
		Capacity:     capacity,
		Overhead:     overhead(s.vcpu, pods),
		Offerings:    offerings,
		Burst:        Burst(name, s.vcpu),
		VolumePrice:  rootVolume,
	}
}

// maxPods is the node's pod capacity: kubelet maxPods when configured,
// otherwise the VPC CNI formula ENIs × (IPv4 per ENI − 1) + 2, capped.
func maxPods(name, size string, opts Options) int64 {
	if opts.MaxPods > 0 {
		return int64(opts.MaxPods)
	}
	limits, ok := eniOverrides[name]
	if !ok {
		limits = eniLimits[size]
	}
	pods := limits[0]*(limits[1]-1) + 2
	if !opts.UncappedENIPods {
		pods = min(pods, DefaultMaxPods)
	}
	return pods
}

// spotPrice is the family's typical spot discount, varied by ±12% per
// instance type and zone with a stable hash, so zones differ but runs do
// not.
func spotPrice(f *family, name, zone string, onDemand float64) float64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(zone))
	jitter := float64(h.Sum64()%10001)/10000*0.24 - 0.12
	return roundPrice(onDemand * f.spotDiscount * (1 + jitter))
}

// splitFamily splits "c6g" into category "c" and generation "6".
func splitFamily(name string) (category, generation string) {
	i := strings.IndexFunc(name, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 0 {
		return name, ""
	}
	j := i
	for j < len(name) && name[j] >= '0' && name[j] <= '9' {
		j++
	}
	return name[:i], name[i:j]
}
