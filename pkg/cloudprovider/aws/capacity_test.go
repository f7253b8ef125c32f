package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func typeInfo(vcpus int32, mib int64, enis, ips int32) *ec2types.InstanceTypeInfo {
	return &ec2types.InstanceTypeInfo{
		InstanceType:  "m5.large",
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(vcpus)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(mib)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{"x86_64"}, Manufacturer: aws.String("Intel")},
		NetworkInfo:   &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(enis), Ipv4AddressesPerInterface: aws.Int32(ips)},
	}
}

func TestPods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		info     *ec2types.InstanceTypeInfo
		kubelet  *awsv1.KubeletConfiguration
		family   string
		reserved int
		want     int64
	}{
		{name: "ENI limited", info: typeInfo(2, 8192, 3, 10), family: awsv1.AMIFamilyAL2023, want: 29},
		{name: "reserved ENI", info: typeInfo(2, 8192, 3, 10), family: awsv1.AMIFamilyAL2023, reserved: 1, want: 20},
		{name: "maxPods wins", info: typeInfo(2, 8192, 3, 10), kubelet: &awsv1.KubeletConfiguration{MaxPods: aws.Int32(110)}, family: awsv1.AMIFamilyAL2, want: 110},
		{name: "podsPerCore caps", info: typeInfo(2, 8192, 3, 10), kubelet: &awsv1.KubeletConfiguration{PodsPerCore: aws.Int32(4)}, family: awsv1.AMIFamilyAL2, want: 8},
		{name: "Bottlerocket ignores podsPerCore", info: typeInfo(2, 8192, 3, 10), kubelet: &awsv1.KubeletConfiguration{PodsPerCore: aws.Int32(4)}, family: awsv1.AMIFamilyBottlerocket, want: 29},
		{name: "Windows is 110", info: typeInfo(2, 8192, 3, 10), family: awsv1.AMIFamilyWindows2022, want: 110},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pods(tc.info, tc.kubelet, tc.family, tc.reserved); got != tc.want {
				t.Errorf("pods = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOverhead(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cpu, pods        string
		kubelet          *awsv1.KubeletConfiguration
		wantCPU, wantMem string
		wantEvictMem     string
	}{
		{name: "1 core", cpu: "1", pods: "10", wantCPU: "60m", wantMem: "365Mi", wantEvictMem: "100Mi"},
		{name: "2 cores", cpu: "2", pods: "29", wantCPU: "70m", wantMem: "574Mi", wantEvictMem: "100Mi"},
		{name: "4 cores", cpu: "4", pods: "58", wantCPU: "80m", wantMem: "893Mi", wantEvictMem: "100Mi"},
		{name: "96 cores", cpu: "96", pods: "737", wantCPU: "310m", wantMem: "8362Mi", wantEvictMem: "100Mi"},
		{name: "user values win", cpu: "2", pods: "29", kubelet: &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "1"}, EvictionHard: map[string]string{"memory.available": "500Mi"}}, wantCPU: "1", wantMem: "574Mi", wantEvictMem: "500Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.cpu), corev1.ResourcePods: resource.MustParse(tc.pods), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
			o := overhead(capacity, tc.kubelet)
			for name, want := range map[string]resource.Quantity{"cpu": o.KubeReserved[corev1.ResourceCPU], "memory": o.KubeReserved[corev1.ResourceMemory], "eviction": o.EvictionThreshold[corev1.ResourceMemory]} {
				exp := map[string]string{"cpu": tc.wantCPU, "memory": tc.wantMem, "eviction": tc.wantEvictMem}[name]
				if want.Cmp(resource.MustParse(exp)) != 0 {
					t.Errorf("%s = %s, want %s", name, want.String(), exp)
				}
			}
			if got := o.EvictionThreshold[corev1.ResourceEphemeralStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
				t.Errorf("nodefs eviction = %s, want 10%% of 20Gi", got.String())
			}
		})
	}
}

func TestAliasParameters(t *testing.T) {
	for _, tc := range []struct {
		alias string
		// want is "arch variant(s) parameter", one line per parameter.
		want []string
	}{
		{alias: "al2023@latest", want: []string{
			"x86_64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"x86_64 nvidia /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			"x86_64 neuron /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			"arm64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/recommended/image_id",
			"arm64 nvidia /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/nvidia/recommended/image_id"}},
		{alias: "al2023@v20250101", want: []string{
			"x86_64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.36-v20250101/image_id",
			"x86_64 nvidia /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.36-v20250101/image_id",
			"x86_64 neuron /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.36-v20250101/image_id",
			"arm64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.36-v20250101/image_id",
			"arm64 nvidia /aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.36-v20250101/image_id"}},
		{alias: "al2@v20250101", want: []string{
			"x86_64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2/amazon-eks-node-1.36-v20250101/image_id",
			"x86_64 nvidia,neuron /aws/service/eks/optimized-ami/1.36/amazon-linux-2-gpu/amazon-eks-gpu-node-1.36-v20250101/image_id",
			"arm64 standard /aws/service/eks/optimized-ami/1.36/amazon-linux-2-arm64/amazon-eks-arm64-node-1.36-v20250101/image_id"}},
		{alias: "bottlerocket@1.30.0", want: []string{
			"x86_64 standard /aws/service/bottlerocket/aws-k8s-1.36/x86_64/v1.30.0/image_id",
			"x86_64 nvidia /aws/service/bottlerocket/aws-k8s-1.36-nvidia/x86_64/v1.30.0/image_id",
			"arm64 standard /aws/service/bottlerocket/aws-k8s-1.36/arm64/v1.30.0/image_id",
			"arm64 nvidia /aws/service/bottlerocket/aws-k8s-1.36-nvidia/arm64/v1.30.0/image_id"}},
		{alias: "windows2022@latest", want: []string{
			"x86_64 standard /aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.36/image_id"}},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			a, err := awsv1.ParseAlias(tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range aliasParameters(DefaultSSMParameterRoot, "1.36", a) {
				got = append(got, p.arch+" "+strings.Join(p.variants, ",")+" "+p.name)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("parameters:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestAMIVariantsByAccelerator: each instance type boots the image whose
// requirements it meets: GPU types the NVIDIA variant, Neuron types the
// Neuron one, the rest the standard one, as Karpenter chooses.
func TestAMIVariantsByAccelerator(t *testing.T) {
	ami := func(id, arch, variant string) awsv1.AMI {
		reqs := []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
		return awsv1.AMI{ID: id, Requirements: append(reqs, variantRequirements(variant)...)}
	}
	nc := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{AMIs: []awsv1.AMI{
		ami("ami-arm-std", "arm64", variantStandard), ami("ami-arm-nvidia", "arm64", variantNvidia),
		ami("ami-std", "amd64", variantStandard), ami("ami-nvidia", "amd64", variantNvidia), ami("ami-neuron", "amd64", variantNeuron),
	}}}
	for _, tc := range []struct {
		name string
		reqs map[string][]string
		want string
	}{
		{name: "m5.large", reqs: map[string][]string{v1.LabelArch: {"amd64"}, v1.LabelAWSInstanceGPUCount: nil, v1.LabelAWSInstanceAcceleratorCount: nil}, want: "ami-std"},
		{name: "g5.xlarge", reqs: map[string][]string{v1.LabelArch: {"amd64"}, v1.LabelAWSInstanceGPUCount: {"1"}, v1.LabelAWSInstanceAcceleratorCount: nil}, want: "ami-nvidia"},
		{name: "inf2.xlarge", reqs: map[string][]string{v1.LabelArch: {"amd64"}, v1.LabelAWSInstanceGPUCount: nil, v1.LabelAWSInstanceAcceleratorCount: {"1"}}, want: "ami-neuron"},
		{name: "g5g.xlarge", reqs: map[string][]string{v1.LabelArch: {"arm64"}, v1.LabelAWSInstanceGPUCount: {"1"}}, want: "ami-arm-nvidia"},
		{name: "m6g.large", reqs: map[string][]string{v1.LabelArch: {"arm64"}}, want: "ami-arm-std"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := amiFor(nc, &scheduling.InstanceType{Name: tc.name, Requirements: tc.reqs}); got != tc.want {
				t.Errorf("amiFor = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExhaustedSubnetsClearWhenAddressesReturn(t *testing.T) {
	e := newExhaustedSubnets()
	e.mark("subnet-a", 2)
	e.observe([]subnetInfo{{ID: "subnet-a", AvailableIPs: 2}})
	if n, ok := e.isExhausted("subnet-a"); !ok || n != 2 {
		t.Fatalf("subnet with the same free addresses = %d, %v; want still exhausted", n, ok)
	}
	e.observe([]subnetInfo{{ID: "subnet-a", AvailableIPs: 250}})
	if _, ok := e.isExhausted("subnet-a"); ok {
		t.Error("subnet with 250 free addresses is still exhausted")
	}
}

func TestParseProduct(t *testing.T) {
	doc := `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"X.Y":{"priceDimensions":{"X.Y.Z":{"pricePerUnit":{"USD":"0.0960000000"}}}}}}}`
	it, price, err := parseProduct(doc)
	if err != nil || it != "m5.large" || price != 0.096 {
		t.Errorf("parseProduct = %q, %v, %v; want m5.large, 0.096", it, price, err)
	}
	if _, _, err := parseProduct("{"); err == nil {
		t.Error("parseProduct of broken JSON succeeded")
	}
}

func TestStaticPricesCoverTheSnapshot(t *testing.T) {
	if n := len(staticOnDemandPrices["us-east-1"]); n != 1367 {
		t.Errorf("built-in table has %d us-east-1 types, want the snapshot's 1367", n)
	}
	p := newPrices("eu-west-1", nil, nil, false)
	if v, ok := p.onDemandPrice("m5.large"); !ok || v != 0.096 {
		t.Errorf("eu-west-1 borrows us-east-1's price: got %v, %v", v, ok)
	}
}
