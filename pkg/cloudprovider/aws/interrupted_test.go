package aws

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"
)

// TestMarkUnavailable: an interrupted offering is unavailable for the ICE
// TTL, and only that offering.
func TestMarkUnavailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &Provider{ice: newUnavailableOfferings(clk)}
	p.MarkUnavailable(interruption.UnavailableSpotInterruption, "m5.large", "us-east-1b", "spot")
	for _, tc := range []struct {
		capacityType, instanceType, zone string
		want                             bool
	}{
		{"spot", "m5.large", "us-east-1b", true},
		{"on-demand", "m5.large", "us-east-1b", false},
		{"spot", "m5.large", "us-east-1a", false},
		{"spot", "m5.xlarge", "us-east-1b", false},
	} {
		if got := p.ice.isUnavailable(tc.capacityType, tc.instanceType, tc.zone); got != tc.want {
			t.Errorf("isUnavailable(%s, %s, %s) = %v, want %v", tc.capacityType, tc.instanceType, tc.zone, got, tc.want)
		}
	}
	clk.Step(iceTTL + time.Second)
	if p.ice.isUnavailable("spot", "m5.large", "us-east-1b") {
		t.Error("the offering is still unavailable after the ICE TTL")
	}
}
