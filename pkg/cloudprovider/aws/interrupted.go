package aws

import "github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"

var _ interruption.UnavailableOfferings = (*Provider)(nil)

// MarkUnavailable implements interruption.UnavailableOfferings: an offering
// whose instance EC2 is reclaiming (a spot interruption, a capacity
// reservation interruption) is not launched again for the ICE TTL, as if
// CreateFleet had reported no capacity for it. reason is for the caller's
// logs and events.
func (p *Provider) MarkUnavailable(reason, instanceType, zone, capacityType string) {
	p.ice.mark(capacityType, instanceType, zone)
}
