package v1alpha1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestApplyDefaults(t *testing.T) {
	nc := &SimNodeClass{}
	nc.ApplyDefaults()
	s := nc.Spec
	if s.Region != DefaultRegion || !slices.Equal(s.Zones, DefaultZones) || s.Catalog.Name != DefaultCatalog ||
		s.LaunchDelay.Duration != DefaultLaunchDelay || s.RegistrationDelay.Duration != DefaultRegistrationDelay {
		t.Fatalf("ApplyDefaults gave %+v", s)
	}
	s.Zones[0] = "changed"
	if DefaultZones[0] != "sim-east-1a" {
		t.Fatal("ApplyDefaults shares its slice with DefaultZones")
	}

	set := &SimNodeClass{Spec: SimNodeClassSpec{
		Region:            "sim-west-2",
		Zones:             []string{"sim-west-2a"},
		Catalog:           Catalog{Name: "tiny"},
		LaunchDelay:       metav1.Duration{Duration: time.Second},
		RegistrationDelay: metav1.Duration{Duration: 5 * time.Second},
	}}
	want := *set.Spec.DeepCopy()
	set.ApplyDefaults()
	if set.Spec.Region != want.Region || !slices.Equal(set.Spec.Zones, want.Zones) || set.Spec.Catalog.Name != want.Catalog.Name ||
		set.Spec.LaunchDelay != want.LaunchDelay || set.Spec.RegistrationDelay != want.RegistrationDelay {
		t.Fatalf("ApplyDefaults overwrote set fields: %+v, want %+v", set.Spec, want)
	}
}

func TestInsufficientCapacity(t *testing.T) {
	nc := &SimNodeClass{Spec: SimNodeClassSpec{Faults: &Faults{
		InsufficientCapacity: []InsufficientCapacityFault{
			{InstanceType: "m5.large", Zone: "sim-east-1a", CapacityType: "spot"},
			{InstanceType: "c6g.xlarge"},
			{Zone: "sim-east-1c", CapacityType: "on-demand"},
		},
		SubnetIPExhaustedZones: []string{"sim-east-1b"},
	}}}
	for _, tc := range []struct {
		name                             string
		instanceType, zone, capacityType string
		want                             bool
	}{
		{"exact match", "m5.large", "sim-east-1a", "spot", true},
		{"other capacity type", "m5.large", "sim-east-1a", "on-demand", false},
		{"other zone", "m5.large", "sim-east-1b", "spot", false},
		{"instance type in any zone", "c6g.xlarge", "sim-east-1b", "reserved", true},
		{"zone and capacity type for any type", "r7i.2xlarge", "sim-east-1c", "on-demand", true},
		{"zone but other capacity type", "r7i.2xlarge", "sim-east-1c", "spot", false},
		{"nothing matches", "t4g.small", "sim-east-1a", "on-demand", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nc.InsufficientCapacity(tc.instanceType, tc.zone, tc.capacityType); got != tc.want {
				t.Fatalf("InsufficientCapacity(%s, %s, %s) = %v, want %v", tc.instanceType, tc.zone, tc.capacityType, got, tc.want)
			}
		})
	}
	if !nc.SubnetIPExhausted("sim-east-1b") || nc.SubnetIPExhausted("sim-east-1a") {
		t.Error("SubnetIPExhausted disagrees with subnetIPExhaustedZones")
	}
	if (InsufficientCapacityFault{}).Matches("any", "zone", "spot") != true {
		t.Error("an empty fault must match every launch")
	}

	none := &SimNodeClass{}
	if none.InsufficientCapacity("m5.large", "sim-east-1a", "spot") || none.SubnetIPExhausted("sim-east-1a") {
		t.Error("a SimNodeClass without faults injects none")
	}
	if f := none.FaultsOrEmpty(); f.NeverRegister || len(f.InsufficientCapacity) != 0 {
		t.Errorf("FaultsOrEmpty() = %+v, want the zero value", f)
	}
}
