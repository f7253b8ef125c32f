package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// The catalog comes from DescribeInstanceTypes and the offerings, with
// capacity, overhead, labels and prices as Karpenter computes them.
func TestInstanceTypesFromTheCatalog(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	its, err := p.GetInstanceTypes(ctx, nodePool(nc))
	if err != nil {
		t.Fatal(err)
	}
	if len(its) < 500 {
		t.Fatalf("%d instance types, want the region's catalog (500+)", len(its))
	}
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
		if it.Name == "a1.large" {
			t.Errorf("a1.large offered with AL2023, which does not boot on a1")
		}
	}
	m5 := byName["m5.large"]
	if m5 == nil {
		t.Fatal("no m5.large")
	}
	for name, want := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: "2", corev1.ResourceMemory: "7577Mi", corev1.ResourcePods: "29", corev1.ResourceEphemeralStorage: "20Gi",
	} {
		if got := m5.Capacity[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m5.large %s = %s, want %s", name, got.String(), want)
		}
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "70m", corev1.ResourceMemory: "574Mi", corev1.ResourceEphemeralStorage: "1Gi"} {
		if got := m5.Overhead.KubeReserved[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m5.large kube-reserved %s = %s, want %s", name, got.String(), want)
		}
	}
	if got := m5.Overhead.EvictionThreshold[corev1.ResourceMemory]; got.Cmp(resource.MustParse("100Mi")) != 0 {
		t.Errorf("m5.large eviction threshold = %s, want 100Mi", got.String())
	}
	for key, want := range map[string]string{
		v1.LabelAWSInstanceCategory: "m", v1.LabelAWSInstanceGeneration: "5", v1.LabelAWSInstanceFamily: "m5", v1.LabelAWSInstanceSize: "large",
		v1.LabelAWSInstanceCPU: "2", v1.LabelAWSInstanceMemory: "8192", v1.LabelAWSInstanceHypervisor: "nitro", v1.LabelAWSInstanceCPUManufacturer: "intel",
		v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelTopologyRegion: "us-east-1",
	} {
		if got := m5.Requirements[key]; len(got) != 1 || got[0] != want {
			t.Errorf("m5.large %s = %v, want %s", key, got, want)
		}
	}
	if zones := m5.Requirements[v1.LabelTopologyZone]; len(zones) != 3 {
		t.Errorf("m5.large zones = %v, want the 3 seeded subnets' zones", zones)
	}
	var od, spot int
	for _, o := range m5.Offerings {
		switch o.CapacityType {
		case v1.CapacityTypeOnDemand:
			od++
			if o.Price != 0.096 {
				t.Errorf("m5.large on-demand price = %v, want 0.096 from the built-in table (moto has no Pricing API)", o.Price)
			}
		case v1.CapacityTypeSpot:
			spot++
		}
	}
	if od != 3 || spot != 3 {
		t.Errorf("m5.large offerings = %+v, want on-demand and spot in 3 zones", m5.Offerings)
	}
	if g := byName["g4dn.xlarge"]; g == nil {
		t.Error("no g4dn.xlarge")
	} else {
		if got := g.Capacity["nvidia.com/gpu"]; got.Value() != 1 {
			t.Errorf("g4dn.xlarge nvidia.com/gpu = %s, want 1", got.String())
		}
		for key, want := range map[string]string{v1.LabelAWSInstanceGPUManufacturer: "nvidia", v1.LabelAWSInstanceGPUName: "t4", v1.LabelAWSInstanceGPUCount: "1", v1.LabelAWSInstanceLocalNVMe: "125"} {
			if got := g.Requirements[key]; len(got) != 1 || got[0] != want {
				t.Errorf("g4dn.xlarge %s = %v, want %s", key, got, want)
			}
		}
	}
	if g := byName["m6g.large"]; g == nil || g.Capacity.Memory().Cmp(resource.MustParse("7513Mi")) != 0 {
		t.Errorf("m6g.large memory = %v, want 7513Mi (7.5%% overhead and Graviton's 64Mi)", g)
	}
}

// spec.kubelet shapes pods and reservations.
func TestInstanceTypesFollowKubelet(t *testing.T) {
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{
			MaxPods: awsInt32(200), PodsPerCore: awsInt32(10),
			KubeReserved: map[string]string{"cpu": "250m"}, SystemReserved: map[string]string{"memory": "1Gi"},
			EvictionHard: map[string]string{"memory.available": "5%"},
		}
	}))
	its, err := p.GetInstanceTypes(context.Background(), nodePool(nc))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		if it.Capacity.Pods().Value() != 20 {
			t.Errorf("pods = %d, want min(maxPods 200, podsPerCore 10 × 2 vCPU) = 20", it.Capacity.Pods().Value())
		}
		if got := it.Overhead.KubeReserved[corev1.ResourceCPU]; got.Cmp(resource.MustParse("250m")) != 0 {
			t.Errorf("kube-reserved cpu = %s, want 250m", got.String())
		}
		if got := it.Overhead.SystemReserved[corev1.ResourceMemory]; got.Cmp(resource.MustParse("1Gi")) != 0 {
			t.Errorf("system-reserved memory = %s, want 1Gi", got.String())
		}
		want := resource.NewQuantity((it.Capacity.Memory().Value()*5+99)/100, resource.BinarySI)
		if got := it.Overhead.EvictionThreshold[corev1.ResourceMemory]; got.Cmp(*want) != 0 {
			t.Errorf("eviction memory = %s, want 5%% of capacity (%s)", got.String(), want.String())
		}
		return
	}
	t.Fatal("no m5.large")
}

func awsInt32(v int32) *int32 { return &v }

// After the one-minute caches expire, a reconcile of an unchanged node
// class re-reads subnets, security groups and images and nothing else
// (the instance profile is cached 15 minutes, SSM parameters a day).
func TestReconcileAfterCacheExpiry(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	opts := providerOptions(t, "cluster-a")
	opts.Clock = clk
	p, err := awsprovider.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	nc := readyNodeClass(t, p, nodeClass(t))
	clk.Step(61 * time.Second)
	local.calls.reset()
	reconcileNodeClass(t, p, nc.Name)
	counts := local.calls.reset()
	t.Logf("AWS calls of a reconcile of an unchanged node class after the 1-minute caches expired: %s", describe(counts))
	want := map[string]int{"EC2:DescribeSubnets": 1, "EC2:DescribeSecurityGroups": 1, "EC2:DescribeImages": 1}
	if len(counts) != len(want) {
		t.Errorf("calls = %s, want one DescribeSubnets, DescribeSecurityGroups and DescribeImages", describe(counts))
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s = %d, want %d", k, counts[k], v)
		}
	}
}
