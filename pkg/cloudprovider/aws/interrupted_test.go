package aws

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/interruption"
)

// TestMarkUnavailable: an interrupted offering is unavailable for the ICE
// TTL, and only that offering.
func TestMarkUnavailable(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	p := &Provider{ice: newUnavailableOfferings(clk, cloudprovider.DefaultUnavailableOfferingsTTL)}
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
	clk.Step(cloudprovider.DefaultUnavailableOfferingsTTL + time.Second)
	if p.ice.isUnavailable("spot", "m5.large", "us-east-1b") {
		t.Error("the offering is still unavailable after the ICE TTL")
	}
}

// The ICE cache keeps an offering for the provider's
// UnavailableOfferingsTTL (joiner's --unavailable-offerings-ttl), which
// defaults to Karpenter's 3 minutes and cannot be negative.
func TestUnavailableOfferingsTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl, want time.Duration
		wantErr   bool
	}{{0, 3 * time.Minute, false}, {30 * time.Second, 30 * time.Second, false}, {-time.Second, 0, true}} {
		o := Options{UnavailableOfferingsTTL: tc.ttl}
		err := o.validate()
		if got := err != nil && strings.Contains(err.Error(), "unavailable-offerings-ttl"); got != tc.wantErr {
			t.Errorf("TTL %s: validate() = %v, want an error naming unavailable-offerings-ttl: %v", tc.ttl, err, tc.wantErr)
		}
		if tc.wantErr {
			continue
		}
		if o.UnavailableOfferingsTTL != tc.want {
			t.Fatalf("TTL %s: validated to %s, want %s", tc.ttl, o.UnavailableOfferingsTTL, tc.want)
		}
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		ice := newUnavailableOfferings(clk, o.UnavailableOfferingsTTL)
		ice.mark("on-demand", "m5.large", "us-east-1a")
		clk.Step(tc.want - time.Second)
		if !ice.isUnavailable("on-demand", "m5.large", "us-east-1a") {
			t.Errorf("TTL %s: the offering is available again a second before the TTL", tc.want)
		}
		clk.Step(2 * time.Second)
		if ice.isUnavailable("on-demand", "m5.large", "us-east-1a") {
			t.Errorf("TTL %s: the offering is still unavailable a second after the TTL", tc.want)
		}
	}
}

// New hands the option to the ICE cache it builds (Karpenter's 3 minutes
// when unset): the cache's own TTL test builds the cache directly and
// would not see a provider that dropped the option.
func TestNewKeepsUnavailableOfferingsTTL(t *testing.T) {
	type nopEC2 struct{ EC2API }
	type nopIAM struct{ IAMAPI }
	type nopSSM struct{ SSMAPI }
	type nopClient struct{ client.Client }
	for _, tc := range []struct{ ttl, want time.Duration }{{0, cloudprovider.DefaultUnavailableOfferingsTTL}, {30 * time.Second, 30 * time.Second}} {
		p, err := New(Options{EC2: nopEC2{}, IAM: nopIAM{}, SSM: nopSSM{}, Client: nopClient{}, Region: "us-east-1", ClusterName: "c",
			KubernetesVersion: "1.33", UserData: func(UserDataOptions) (string, error) { return "", nil }, UnavailableOfferingsTTL: tc.ttl})
		if err != nil {
			t.Fatal(err)
		}
		if p.ice.ttl != tc.want {
			t.Errorf("UnavailableOfferingsTTL %s: the ICE cache keeps offerings %s, want %s", tc.ttl, p.ice.ttl, tc.want)
		}
	}
}
