package catalog

import (
	"math"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestKnownInstanceTypes(t *testing.T) {
	c, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		cpu, memory, pods string
		allocCPU          string
		allocMemory       string
		gpus              string
		labels            map[string]string
		onDemand          float64
	}{
		{
			name: "m5.large", cpu: "2", memory: "8Gi", pods: "29", allocCPU: "1930m", allocMemory: "7518Mi", onDemand: 0.096,
			labels: map[string]string{
				v1.LabelAWSInstanceCategory: "m", v1.LabelAWSInstanceFamily: "m5", v1.LabelAWSInstanceGeneration: "5", v1.LabelAWSInstanceSize: "large",
				v1.LabelAWSInstanceCPU: "2", v1.LabelAWSInstanceMemory: "8192", v1.LabelAWSInstanceHypervisor: "nitro", "kubernetes.io/arch": "amd64",
			},
		},
		{name: "m5.4xlarge", cpu: "16", memory: "64Gi", pods: "110", allocCPU: "15890m", onDemand: 0.768},
		{name: "t3.nano", cpu: "2", memory: "512Mi", pods: "4", onDemand: 0.0052},
		{name: "t3.medium", cpu: "2", memory: "4Gi", pods: "17", onDemand: 0.0416},
		{name: "c5.large", cpu: "2", memory: "4Gi", pods: "29", onDemand: 0.085},
		{name: "c5.9xlarge", cpu: "36", memory: "72Gi", pods: "110", onDemand: 1.53},
		{
			name: "m6g.medium", cpu: "1", memory: "4Gi", pods: "8", allocCPU: "940m", onDemand: 0.0385,
			labels: map[string]string{"kubernetes.io/arch": "arm64", v1.LabelAWSInstanceCPUManufacturer: "aws", v1.LabelAWSInstanceGeneration: "6"},
		},
		{name: "r6i.large", cpu: "2", memory: "16Gi", pods: "29", onDemand: 0.126},
		{
			name: "g5.xlarge", cpu: "4", memory: "16Gi", pods: "58", gpus: "1", onDemand: 1.006,
			labels: map[string]string{v1.LabelAWSInstanceGPUName: "a10g", v1.LabelAWSInstanceGPUManufacturer: "nvidia", v1.LabelAWSInstanceGPUCount: "1", v1.LabelAWSInstanceGPUMemory: "24576", v1.LabelAWSInstanceLocalNVMe: "250"},
		},
		{name: "g4dn.12xlarge", cpu: "48", memory: "192Gi", pods: "110", gpus: "4", onDemand: 3.912},
		{name: "p3.2xlarge", cpu: "8", memory: "61Gi", pods: "58", gpus: "1", onDemand: 3.06, labels: map[string]string{v1.LabelAWSInstanceHypervisor: "xen"}},
		{name: "i3.large", cpu: "2", memory: "15616Mi", pods: "29", onDemand: 0.156, labels: map[string]string{v1.LabelAWSInstanceLocalNVMe: "475"}},
		{name: "x2gd.medium", cpu: "1", memory: "16Gi", pods: "8", onDemand: 0.0835, labels: map[string]string{v1.LabelAWSInstanceCategory: "x", v1.LabelAWSInstanceGeneration: "2"}},
		{name: "m7i.48xlarge", cpu: "192", memory: "768Gi", pods: "110", allocCPU: "191450m", onDemand: 9.6768},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := c.Get(tc.name)
			if !ok {
				t.Fatalf("%s not in the catalog", tc.name)
			}
			check := func(what string, rl corev1.ResourceList, name corev1.ResourceName, want string) {
				t.Helper()
				if want == "" {
					return
				}
				got := rl[name]
				if got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			check("capacity", it.Capacity, corev1.ResourceCPU, tc.cpu)
			check("capacity", it.Capacity, corev1.ResourceMemory, tc.memory)
			check("capacity", it.Capacity, corev1.ResourcePods, tc.pods)
			check("capacity", it.Capacity, "nvidia.com/gpu", tc.gpus)
			alloc := it.Allocatable()
			check("allocatable", alloc, corev1.ResourceCPU, tc.allocCPU)
			check("allocatable", alloc, corev1.ResourceMemory, tc.allocMemory)
			for k, v := range tc.labels {
				if got := it.Requirements[k]; len(got) != 1 || got[0] != v {
					t.Errorf("requirements[%s] = %v, want [%s]", k, got, v)
				}
			}
			for _, o := range it.Offerings {
				switch o.CapacityType {
				case v1.CapacityTypeOnDemand:
					if o.Price != tc.onDemand {
						t.Errorf("on-demand price in %s = %v, want %v", o.Zone, o.Price, tc.onDemand)
					}
				case v1.CapacityTypeSpot:
					if o.Price >= tc.onDemand || o.Price < tc.onDemand*0.2 {
						t.Errorf("spot price in %s = %v, want a realistic discount on %v", o.Zone, o.Price, tc.onDemand)
					}
				}
			}
			if len(it.Offerings) != 6 {
				t.Errorf("%d offerings, want 3 zones × 2 capacity types", len(it.Offerings))
			}
		})
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		check   func(t *testing.T, c *Catalog)
		wantErr string
	}{
		{
			name: "families filter",
			opts: Options{Families: []string{"c6g", "t4g"}},
			check: func(t *testing.T, c *Catalog) {
				for _, it := range c.InstanceTypes() {
					if f := it.Requirements[v1.LabelAWSInstanceFamily][0]; f != "c6g" && f != "t4g" {
						t.Errorf("unexpected family %s", f)
					}
				}
				if len(c.InstanceTypes()) != 15 {
					t.Errorf("%d types, want 8 c6g + 7 t4g", len(c.InstanceTypes()))
				}
			},
		},
		{name: "unknown family", opts: Options{Families: []string{"z9"}}, wantErr: `families[0]: unknown instance family "z9"`},
		{name: "duplicate zone", opts: Options{Zones: []string{"a", "a"}}, wantErr: `zones[1]: duplicate zone "a"`},
		{
			name: "zones and on-demand only",
			opts: Options{Zones: []string{"eu-west-1a"}, WithoutSpot: true},
			check: func(t *testing.T, c *Catalog) {
				it, _ := c.Get("m5.large")
				if len(it.Offerings) != 1 || it.Offerings[0].Zone != "eu-west-1a" || it.Offerings[0].CapacityType != v1.CapacityTypeOnDemand {
					t.Errorf("offerings = %+v", it.Offerings)
				}
			},
		},
		{
			name: "kubelet maxPods",
			opts: Options{MaxPods: 50},
			check: func(t *testing.T, c *Catalog) {
				it, _ := c.Get("m5.large")
				if p := it.Capacity[corev1.ResourcePods]; p.Value() != 50 {
					t.Errorf("pods = %s, want 50", p.String())
				}
				if m := it.Overhead.KubeReserved[corev1.ResourceMemory]; m.Value() != (11*50+255)<<20 {
					t.Errorf("kube-reserved memory = %s, want %dMi", m.String(), 11*50+255)
				}
			},
		},
		{
			name: "uncapped ENI pods",
			opts: Options{UncappedENIPods: true},
			check: func(t *testing.T, c *Catalog) {
				it, _ := c.Get("m5.24xlarge")
				if p := it.Capacity[corev1.ResourcePods]; p.Value() != 737 {
					t.Errorf("pods = %s, want 737", p.String())
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Default(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestDeterministicAndZoneVaried(t *testing.T) {
	a, _ := Default(Options{})
	b, _ := Default(Options{})
	if !reflect.DeepEqual(a.InstanceTypes(), b.InstanceTypes()) {
		t.Fatal("two builds differ")
	}
	names := map[string]bool{}
	for _, it := range a.InstanceTypes() {
		if names[it.Name] {
			t.Errorf("duplicate %s", it.Name)
		}
		names[it.Name] = true
	}
	it, _ := a.Get("m5.xlarge")
	spot := map[float64]bool{}
	for _, o := range it.Offerings {
		if o.CapacityType == v1.CapacityTypeSpot {
			spot[o.Price] = true
		}
	}
	if len(spot) < 2 {
		t.Errorf("spot prices do not vary by zone: %v", spot)
	}
	if len(a.InstanceTypes()) < 150 {
		t.Errorf("only %d instance types", len(a.InstanceTypes()))
	}
}

// TestBilling: the burstable families carry their unlimited-mode credit
// model, every other type none, and every type its root volume's price.
func TestBilling(t *testing.T) {
	c, err := Default(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		baseline int64
		rate     float64
	}{
		{name: "t4g.small", baseline: 400, rate: 0.04},
		{name: "t3.nano", baseline: 100, rate: 0.05},
		{name: "t3a.xlarge", baseline: 1600, rate: 0.05},
		{name: "m5.large"},
	} {
		it, ok := c.Get(tc.name)
		if !ok {
			t.Fatalf("%s not in the catalog", tc.name)
		}
		switch {
		case tc.rate == 0 && it.Burst != nil:
			t.Errorf("%s: burst %+v, want none", tc.name, *it.Burst)
		case tc.rate != 0 && (it.Burst == nil || it.Burst.BaselineMilliCPU != tc.baseline || it.Burst.SurplusPerVCPUHour != tc.rate):
			t.Errorf("%s: burst %+v, want baseline %dm at %v $/vCPU-h", tc.name, it.Burst, tc.baseline, tc.rate)
		}
		if want := 0.08 * RootVolumeGiB / HoursPerMonth; math.Abs(it.VolumePrice-want) > 1e-12 {
			t.Errorf("%s: volume price %v, want %v", tc.name, it.VolumePrice, want)
		}
	}
	if _, ok := VolumePrice("io9", 10); ok {
		t.Error("VolumePrice priced an unknown volume type")
	}
}
