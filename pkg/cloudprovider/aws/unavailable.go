package aws

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// iceCodes are the CreateFleet error codes that mean "no capacity for this
// offering", as Karpenter classifies them.
var iceCodes = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"MaxSpotInstanceCountExceeded": true,
	"VcpuLimitExceeded":            true,
	"UnfulfillableCapacity":        true,
	"Unsupported":                  true,
	"MaxFleetCountExceeded":        true,
	"ReservationCapacityExceeded":  true,
}

// codeSubnetExhausted marks the subnet, not the offering.
const codeSubnetExhausted = "InsufficientFreeAddressesInSubnet"

// unavailableOfferings is the ICE cache: capacity type × instance type ×
// zone. It is applied to every instance type listing (the computed types
// are cached without availability). An offering stays unavailable for ttl
// (Options.UnavailableOfferingsTTL) after it failed for lack of capacity.
type unavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration
	mu    sync.Mutex
	until map[string]time.Time
}

func newUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *unavailableOfferings {
	return &unavailableOfferings{clock: c, ttl: ttl, until: map[string]time.Time{}}
}

func iceKey(capacityType, instanceType, zone string) string {
	return capacityType + ":" + instanceType + ":" + zone
}

func (u *unavailableOfferings) mark(capacityType, instanceType, zone string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[iceKey(capacityType, instanceType, zone)] = u.clock.Now().Add(u.ttl)
}

func (u *unavailableOfferings) isUnavailable(capacityType, instanceType, zone string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	key := iceKey(capacityType, instanceType, zone)
	t, ok := u.until[key]
	if !ok {
		return false
	}
	if u.clock.Now().Before(t) {
		return true
	}
	delete(u.until, key)
	return false
}

// exhaustedSubnets remembers subnets a launch found without free addresses
// until DescribeSubnets shows free addresses again. Unlike Karpenter, which
// marks the whole zone unavailable for every node class, only that subnet
// is skipped: another subnet in the zone, or another node class's subnet,
// still launches.
type exhaustedSubnets struct {
	mu   sync.Mutex
	free map[string]int32 // subnet -> free addresses when it was marked
}

func newExhaustedSubnets() *exhaustedSubnets {
	return &exhaustedSubnets{free: map[string]int32{}}
}

func (e *exhaustedSubnets) mark(subnetID string, free int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.free[subnetID] = free
}

func (e *exhaustedSubnets) isExhausted(subnetID string) (int32, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.free[subnetID]
	return n, ok
}

// observe clears subnets that DescribeSubnets shows with more free
// addresses than when they were marked (a secondary CIDR, terminated
// instances).
func (e *exhaustedSubnets) observe(subnets []subnetInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range subnets {
		if n, ok := e.free[s.ID]; ok && s.AvailableIPs > n && s.AvailableIPs > 0 {
			delete(e.free, s.ID)
		}
	}
}
