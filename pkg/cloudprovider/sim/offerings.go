package sim

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
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
	if v := it.Requirements[kwokv1alpha1.LabelInstanceFamily]; len(v) == 1 {
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

// filteredCatalogs remembers filterForNodeClass's result per catalog and
// node class, as the AWS provider remembers its computed instance types:
// GetInstanceTypes runs for every provisioning batch, disruption poll,
// metrics interval, launch and drift check, and filtering the catalog
// afresh each time (a copy of every type and its requirements) was the
// largest allocator of joiner's 3,000-pod load run.
type filteredCatalogs struct {
	mu sync.Mutex
	// byNodeClass is keyed by the node class's zones and families; an
	// entry holds for the catalog slice it was filtered from only, so a
	// CatalogFunc that builds a new catalog is filtered again (and the
	// map holds one entry per zones and families, whatever the catalog).
	byNodeClass map[string]filteredCatalog
}

type filteredCatalog struct {
	catalog, types []*scheduling.InstanceType
}

// get returns filterForNodeClass(catalog, nc), computed once per catalog
// and node class. The result is shared: callers must not change it.
func (f *filteredCatalogs) get(catalog []*scheduling.InstanceType, nc *simv1alpha1.SimNodeClass) []*scheduling.InstanceType {
	key := strings.Join(nc.Spec.Zones, ",") + "|" + strings.Join(nc.Spec.Catalog.InstanceFamilies, ",")
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.byNodeClass[key]; ok && sameSlice(e.catalog, catalog) {
		return e.types
	}
	types := filterForNodeClass(catalog, nc)
	if f.byNodeClass == nil {
		f.byNodeClass = map[string]filteredCatalog{}
	}
	f.byNodeClass[key] = filteredCatalog{catalog: catalog, types: types}
	return types
}

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// withOwnOfferings copies the types with offerings of their own, for
// availability to be marked on: the rest (requirements, capacity,
// overhead) stays shared, as the AWS provider's types share it.
func withOwnOfferings(its []*scheduling.InstanceType) []*scheduling.InstanceType {
	out := make([]*scheduling.InstanceType, len(its))
	for i, it := range its {
		c := *it
		c.Offerings = slices.Clone(it.Offerings)
		out[i] = &c
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
	until map[string]time.Time // offeringKey or subnetKey -> expiry
}

func newUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: c, ttl: ttl, until: map[string]time.Time{}}
}

func offeringKey(instanceType, zone, capacityType string) string {
	return capacityType + ":" + instanceType + ":" + zone
}

// subnetKey is a node class's subnet in a zone: a subnet out of addresses
// is one node class's (as the AWS provider keys it by subnet), so another
// node class launching into the same zone is not held back by it, while an
// insufficient capacity (offeringKey) is the region's, for every class.
func subnetKey(nodeClass, zone string) string { return "subnet:" + nodeClass + ":" + zone }

// markOffering makes one offering unavailable for the TTL.
func (u *unavailableOfferings) markOffering(instanceType, zone, capacityType string) {
	u.mark(offeringKey(instanceType, zone, capacityType))
}

// markSubnet makes every offering of nodeClass in zone unavailable for the
// TTL.
func (u *unavailableOfferings) markSubnet(nodeClass, zone string) { u.mark(subnetKey(nodeClass, zone)) }

func (u *unavailableOfferings) mark(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[key] = u.clock.Now().Add(u.ttl)
}

func (u *unavailableOfferings) isUnavailable(nodeClass, instanceType, zone, capacityType string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for _, key := range []string{offeringKey(instanceType, zone, capacityType), subnetKey(nodeClass, zone)} {
		if t, ok := u.until[key]; ok {
			if now.Before(t) {
				return true
			}
			delete(u.until, key)
		}
	}
	return false
}

// apply marks the offerings of nodeClass's its in place.
func (u *unavailableOfferings) apply(nodeClass string, its []*scheduling.InstanceType) {
	for _, it := range its {
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Available && u.isUnavailable(nodeClass, it.Name, o.Zone, o.CapacityType) {
				o.Available = false
			}
		}
	}
}
