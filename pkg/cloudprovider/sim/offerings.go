package sim

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// familyOf returns an instance type's family: its family label when the
// catalog sets one, else the part of its name before the first dot
// ("m5" for "m5.large").
func familyOf(it *scheduling.InstanceType) string {
	if v := it.Requirements[v1.LabelAWSInstanceFamily]; len(v) == 1 {
		return v[0]
	}
	family, _, _ := strings.Cut(it.Name, ".")
	return family
}

// filterForNodeClass returns copies of the catalog's instance types that the
// node class offers: only its families (when it names any) and only
// offerings in its zones. Types left with no offering are dropped. The
// catalog is never modified.
func filterForNodeClass(catalog []*scheduling.InstanceType, nc *simv1alpha1.SimNodeClass) []*scheduling.InstanceType {
	zones := nc.Spec.Zones
	families := nc.Spec.Catalog.InstanceFamilies
	out := make([]*scheduling.InstanceType, 0, len(catalog))
	for _, it := range catalog {
		if len(families) > 0 && !slices.Contains(families, familyOf(it)) {
			continue
		}
		var offerings []scheduling.Offering
		for _, o := range it.Offerings {
			if slices.Contains(zones, o.Zone) {
				offerings = append(offerings, o)
			}
		}
		if len(offerings) == 0 {
			continue
		}
		c := *it
		c.Offerings = offerings
		c.Requirements = make(map[string][]string, len(it.Requirements))
		for k, v := range it.Requirements {
			c.Requirements[k] = v
		}
		c.Requirements[v1.LabelTopologyZone] = offeringValues(offerings, func(o scheduling.Offering) string { return o.Zone })
		c.Requirements[v1.LabelCapacityType] = offeringValues(offerings, func(o scheduling.Offering) string { return o.CapacityType })
		out = append(out, &c)
	}
	return out
}

func offeringValues(offerings []scheduling.Offering, f func(scheduling.Offering) string) []string {
	var out []string
	for _, o := range offerings {
		if v := f(o); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// unavailableOfferings remembers offerings that recently failed to launch
// (insufficient capacity, a subnet out of addresses), as a cloud provider's
// ICE cache does, so GetInstanceTypes reports them unavailable for a while
// and the provisioner picks another.
type unavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	until map[string]time.Time // offeringKey or zoneKey -> expiry
}

func newUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: c, ttl: ttl, until: map[string]time.Time{}}
}

func offeringKey(instanceType, zone, capacityType string) string {
	return capacityType + ":" + instanceType + ":" + zone
}

func zoneKey(zone string) string { return "zone:" + zone }

// markOffering makes one offering unavailable for the TTL.
func (u *unavailableOfferings) markOffering(instanceType, zone, capacityType string) {
	u.mark(offeringKey(instanceType, zone, capacityType))
}

// markZone makes every offering in zone unavailable for the TTL.
func (u *unavailableOfferings) markZone(zone string) { u.mark(zoneKey(zone)) }

func (u *unavailableOfferings) mark(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[key] = u.clock.Now().Add(u.ttl)
}

func (u *unavailableOfferings) isUnavailable(instanceType, zone, capacityType string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for _, key := range []string{offeringKey(instanceType, zone, capacityType), zoneKey(zone)} {
		if t, ok := u.until[key]; ok {
			if now.Before(t) {
				return true
			}
			delete(u.until, key)
		}
	}
	return false
}

// apply marks the offerings of its in place.
func (u *unavailableOfferings) apply(its []*scheduling.InstanceType) {
	for _, it := range its {
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Available && u.isUnavailable(it.Name, o.Zone, o.CapacityType) {
				o.Available = false
			}
		}
	}
}

// candidate is one way to satisfy a NodeClaim: an instance type bought
// through one of its offerings.
type candidate struct {
	it       *scheduling.InstanceType
	offering scheduling.Offering
}

func (c candidate) String() string {
	return c.it.Name + "/" + c.offering.Zone + "/" + c.offering.CapacityType
}

// candidates returns every available (type, offering) pair that satisfies
// the requirements and fits the requests, cheapest first (ties broken by
// type name, zone and capacity type so launches are deterministic).
func candidates(its []*scheduling.InstanceType, reqs []v1.NodeSelectorRequirementWithMinValues, requests corev1.ResourceList) []candidate {
	var out []candidate
	for _, it := range its {
		if !typeSatisfies(it, reqs) || !fits(it.Allocatable(), requests) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !offeringSatisfies(o, reqs) {
				continue
			}
			out = append(out, candidate{it: it, offering: o})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		return cmp.Or(
			cmp.Compare(a.offering.Price, b.offering.Price),
			cmp.Compare(a.it.Name, b.it.Name),
			cmp.Compare(a.offering.Zone, b.offering.Zone),
			cmp.Compare(a.offering.CapacityType, b.offering.CapacityType),
		)
	})
	return out
}

func fits(allocatable, requests corev1.ResourceList) bool {
	for name, want := range requests {
		have, ok := allocatable[name]
		if !ok {
			if want.IsZero() {
				continue
			}
			return false
		}
		if have.Cmp(want) < 0 {
			return false
		}
	}
	return true
}

// typeSatisfies checks the requirements on keys the instance type defines;
// keys it does not define (a NodePool's own labels, zone and capacity type,
// which depend on the offering) are not its to decide.
func typeSatisfies(it *scheduling.InstanceType, reqs []v1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		key := v1.NormalizeLabel(r.Key)
		if key == v1.LabelTopologyZone || key == v1.LabelCapacityType {
			continue
		}
		values, defined := it.Requirements[key]
		if key == v1.LabelInstanceType {
			values, defined = []string{it.Name}, true
		}
		if !defined {
			continue
		}
		if !v1.RequirementAdmitsAny(r.Operator, r.Values, values) {
			return false
		}
	}
	return true
}

func offeringSatisfies(o scheduling.Offering, reqs []v1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		switch v1.NormalizeLabel(r.Key) {
		case v1.LabelTopologyZone:
			if !v1.RequirementAdmitsAny(r.Operator, r.Values, []string{o.Zone}) {
				return false
			}
		case v1.LabelCapacityType:
			if !v1.RequirementAdmitsAny(r.Operator, r.Values, []string{o.CapacityType}) {
				return false
			}
		}
	}
	return true
}

// instanceLabels are the labels an instance of it bought through o
// carries: every label of the type (for a label with several possible
// values, such as the os of a type that runs linux or windows, the first
// value the requirements allow) plus zone, region and capacity type.
func instanceLabels(it *scheduling.InstanceType, o scheduling.Offering, region string, reqs []v1.NodeSelectorRequirementWithMinValues) map[string]string {
	labels := map[string]string{}
	for k, values := range it.Requirements {
		for _, v := range values {
			if requirementsAllow(reqs, k, v) {
				labels[k] = v
				break
			}
		}
	}
	labels[v1.LabelInstanceType] = it.Name
	labels[v1.LabelTopologyZone] = o.Zone
	labels[v1.LabelTopologyRegion] = region
	labels[v1.LabelCapacityType] = o.CapacityType
	if labels[v1.LabelOS] == "" {
		labels[v1.LabelOS] = "linux"
	}
	if labels[v1.LabelArch] == "" {
		labels[v1.LabelArch] = "amd64"
	}
	return labels
}

func requirementsAllow(reqs []v1.NodeSelectorRequirementWithMinValues, key, value string) bool {
	for _, r := range reqs {
		if v1.NormalizeLabel(r.Key) == key && !v1.RequirementAdmits(r.Operator, r.Values, value, true) {
			return false
		}
	}
	return true
}

func describeOfferings(cs []candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}
