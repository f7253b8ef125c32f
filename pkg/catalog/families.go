package catalog

// family is one instance family's static description.
type family struct {
	name         string
	arch         string // amd64 or arm64
	manufacturer string // karpenter.k8s.aws/instance-cpu-manufacturer
	hypervisor   string // nitro or xen
	burstable    bool
	// sizes lists the family's sizes; for families whose shapes do not
	// follow a fixed ratio, each size carries its own memory, price and
	// device counts.
	sizes []size
	// spotDiscount is the family's typical spot price as a fraction of
	// on-demand, before per-zone variation.
	spotDiscount float64
	gpu          *gpu
}

// size is one instance size of a family.
type size struct {
	name      string
	vcpu      int64
	memoryMiB int64
	price     float64 // on-demand $/hour
	gpus      int64   // GPU count, for GPU families
	nvmeGiB   int64   // local NVMe instance storage
}

// gpu describes a family's accelerator.
type gpu struct {
	name         string // karpenter.k8s.aws/instance-gpu-name
	manufacturer string
	memoryMiB    int64 // per GPU
	resource     string
}

// ratioSizes builds sizes for families with a fixed memory per vCPU and
// price per vCPU-hour.
func ratioSizes(memPerVCPUGiB int64, pricePerVCPU float64, names ...string) []size {
	out := make([]size, 0, len(names))
	for _, n := range names {
		v := standardVCPU[n]
		out = append(out, size{name: n, vcpu: v, memoryMiB: v * memPerVCPUGiB * 1024, price: roundPrice(pricePerVCPU * float64(v))})
	}
	return out
}

// standardVCPU is the vCPU count of each size name in the regular
// (non-burstable) families.
var standardVCPU = map[string]int64{
	"medium": 1, "large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32,
	"9xlarge": 36, "12xlarge": 48, "16xlarge": 64, "18xlarge": 72, "24xlarge": 96,
	"32xlarge": 128, "48xlarge": 192,
}

var (
	sizesM5    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"}
	sizes6i    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "32xlarge"}
	sizes7i    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}
	sizesGrav  = []string{"medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}
	sizesC5    = []string{"large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge"}
	nvidiaT4   = &gpu{name: "t4", manufacturer: "nvidia", memoryMiB: 16384, resource: "nvidia.com/gpu"}
	nvidiaA10G = &gpu{name: "a10g", manufacturer: "nvidia", memoryMiB: 24576, resource: "nvidia.com/gpu"}
	nvidiaV100 = &gpu{name: "v100", manufacturer: "nvidia", memoryMiB: 16384, resource: "nvidia.com/gpu"}
)

// burstable builds t-family sizes from their published vCPU, memory and
// price.
func burstable(prices [7]float64) []size {
	shapes := [7]struct {
		name   string
		vcpu   int64
		memMiB int64
	}{
		{"nano", 2, 512}, {"micro", 2, 1024}, {"small", 2, 2048}, {"medium", 2, 4096},
		{"large", 2, 8192}, {"xlarge", 4, 16384}, {"2xlarge", 8, 32768},
	}
	out := make([]size, 0, len(shapes))
	for i, s := range shapes {
		out = append(out, size{name: s.name, vcpu: s.vcpu, memoryMiB: s.memMiB, price: prices[i]})
	}
	return out
}

// families is the catalog, in the order instance types are listed.
var families = []family{
	{name: "t3", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", burstable: true, spotDiscount: 0.31,
		sizes: burstable([7]float64{0.0052, 0.0104, 0.0208, 0.0416, 0.0832, 0.1664, 0.3328})},
	{name: "t3a", arch: "amd64", manufacturer: "amd", hypervisor: "nitro", burstable: true, spotDiscount: 0.33,
		sizes: burstable([7]float64{0.0047, 0.0094, 0.0188, 0.0376, 0.0752, 0.1504, 0.3008})},
	{name: "t4g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", burstable: true, spotDiscount: 0.32,
		sizes: burstable([7]float64{0.0042, 0.0084, 0.0168, 0.0336, 0.0672, 0.1344, 0.2688})},
	{name: "m5", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.38, sizes: ratioSizes(4, 0.048, sizesM5...)},
	{name: "m6i", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.40, sizes: ratioSizes(4, 0.048, sizes6i...)},
	{name: "m6g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.42, sizes: ratioSizes(4, 0.0385, sizesGrav...)},
	{name: "m7i", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.45, sizes: ratioSizes(4, 0.0504, sizes7i...)},
	{name: "m7g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.44, sizes: ratioSizes(4, 0.0408, sizesGrav...)},
	{name: "c5", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.36, sizes: ratioSizes(2, 0.0425, sizesC5...)},
	{name: "c6i", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.39, sizes: ratioSizes(2, 0.0425, sizes6i...)},
	{name: "c6g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.41, sizes: ratioSizes(2, 0.034, sizesGrav...)},
	{name: "c7g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.43, sizes: ratioSizes(2, 0.03625, sizesGrav...)},
	{name: "r5", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.33, sizes: ratioSizes(8, 0.063, sizesM5...)},
	{name: "r6i", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.37, sizes: ratioSizes(8, 0.063, sizes6i...)},
	{name: "r6g", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.40, sizes: ratioSizes(8, 0.0504, sizesGrav...)},
	{name: "g4dn", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.35, gpu: nvidiaT4, sizes: []size{
		{name: "xlarge", vcpu: 4, memoryMiB: 16384, price: 0.526, gpus: 1, nvmeGiB: 125},
		{name: "2xlarge", vcpu: 8, memoryMiB: 32768, price: 0.752, gpus: 1, nvmeGiB: 225},
		{name: "4xlarge", vcpu: 16, memoryMiB: 65536, price: 1.204, gpus: 1, nvmeGiB: 225},
		{name: "8xlarge", vcpu: 32, memoryMiB: 131072, price: 2.176, gpus: 1, nvmeGiB: 900},
		{name: "12xlarge", vcpu: 48, memoryMiB: 196608, price: 3.912, gpus: 4, nvmeGiB: 900},
		{name: "16xlarge", vcpu: 64, memoryMiB: 262144, price: 4.352, gpus: 1, nvmeGiB: 900},
	}},
	{name: "g5", arch: "amd64", manufacturer: "amd", hypervisor: "nitro", spotDiscount: 0.40, gpu: nvidiaA10G, sizes: []size{
		{name: "xlarge", vcpu: 4, memoryMiB: 16384, price: 1.006, gpus: 1, nvmeGiB: 250},
		{name: "2xlarge", vcpu: 8, memoryMiB: 32768, price: 1.212, gpus: 1, nvmeGiB: 450},
		{name: "4xlarge", vcpu: 16, memoryMiB: 65536, price: 1.624, gpus: 1, nvmeGiB: 600},
		{name: "8xlarge", vcpu: 32, memoryMiB: 131072, price: 2.448, gpus: 1, nvmeGiB: 900},
		{name: "12xlarge", vcpu: 48, memoryMiB: 196608, price: 5.672, gpus: 4, nvmeGiB: 3800},
		{name: "16xlarge", vcpu: 64, memoryMiB: 262144, price: 4.096, gpus: 1, nvmeGiB: 1900},
		{name: "24xlarge", vcpu: 96, memoryMiB: 393216, price: 8.144, gpus: 4, nvmeGiB: 3800},
		{name: "48xlarge", vcpu: 192, memoryMiB: 786432, price: 16.288, gpus: 8, nvmeGiB: 7600},
	}},
	{name: "p3", arch: "amd64", manufacturer: "intel", hypervisor: "xen", spotDiscount: 0.30, gpu: nvidiaV100, sizes: []size{
		{name: "2xlarge", vcpu: 8, memoryMiB: 62464, price: 3.06, gpus: 1},
		{name: "8xlarge", vcpu: 32, memoryMiB: 249856, price: 12.24, gpus: 4},
		{name: "16xlarge", vcpu: 64, memoryMiB: 499712, price: 24.48, gpus: 8},
	}},
	{name: "i3", arch: "amd64", manufacturer: "intel", hypervisor: "xen", spotDiscount: 0.30, sizes: []size{
		{name: "large", vcpu: 2, memoryMiB: 15616, price: 0.156, nvmeGiB: 475},
		{name: "xlarge", vcpu: 4, memoryMiB: 31232, price: 0.312, nvmeGiB: 950},
		{name: "2xlarge", vcpu: 8, memoryMiB: 62464, price: 0.624, nvmeGiB: 1900},
		{name: "4xlarge", vcpu: 16, memoryMiB: 124928, price: 1.248, nvmeGiB: 3800},
		{name: "8xlarge", vcpu: 32, memoryMiB: 249856, price: 2.496, nvmeGiB: 7600},
		{name: "16xlarge", vcpu: 64, memoryMiB: 499712, price: 4.992, nvmeGiB: 15200},
	}},
	{name: "i4i", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.34, sizes: []size{
		{name: "large", vcpu: 2, memoryMiB: 16384, price: 0.172, nvmeGiB: 468},
		{name: "xlarge", vcpu: 4, memoryMiB: 32768, price: 0.343, nvmeGiB: 937},
		{name: "2xlarge", vcpu: 8, memoryMiB: 65536, price: 0.686, nvmeGiB: 1875},
		{name: "4xlarge", vcpu: 16, memoryMiB: 131072, price: 1.373, nvmeGiB: 3750},
		{name: "8xlarge", vcpu: 32, memoryMiB: 262144, price: 2.746, nvmeGiB: 7500},
		{name: "16xlarge", vcpu: 64, memoryMiB: 524288, price: 5.491, nvmeGiB: 15000},
		{name: "32xlarge", vcpu: 128, memoryMiB: 1048576, price: 10.982, nvmeGiB: 30000},
	}},
	{name: "x2gd", arch: "arm64", manufacturer: "aws", hypervisor: "nitro", spotDiscount: 0.35, sizes: []size{
		{name: "medium", vcpu: 1, memoryMiB: 16384, price: 0.0835, nvmeGiB: 59},
		{name: "large", vcpu: 2, memoryMiB: 32768, price: 0.167, nvmeGiB: 118},
		{name: "xlarge", vcpu: 4, memoryMiB: 65536, price: 0.334, nvmeGiB: 237},
		{name: "2xlarge", vcpu: 8, memoryMiB: 131072, price: 0.668, nvmeGiB: 475},
		{name: "4xlarge", vcpu: 16, memoryMiB: 262144, price: 1.336, nvmeGiB: 950},
		{name: "8xlarge", vcpu: 32, memoryMiB: 524288, price: 2.672, nvmeGiB: 1900},
		{name: "12xlarge", vcpu: 48, memoryMiB: 786432, price: 4.008, nvmeGiB: 2850},
		{name: "16xlarge", vcpu: 64, memoryMiB: 1048576, price: 5.344, nvmeGiB: 3800},
	}},
	{name: "x2idn", arch: "amd64", manufacturer: "intel", hypervisor: "nitro", spotDiscount: 0.33, sizes: []size{
		{name: "16xlarge", vcpu: 64, memoryMiB: 1048576, price: 6.669, nvmeGiB: 1900},
		{name: "24xlarge", vcpu: 96, memoryMiB: 1572864, price: 10.0035, nvmeGiB: 2850},
		{name: "32xlarge", vcpu: 128, memoryMiB: 2097152, price: 13.338, nvmeGiB: 3800},
	}},
}

// eniLimits are the ENI count and IPv4 addresses per ENI by size, the VPC
// CNI's inputs; eniOverrides holds the exceptions by instance type.
var eniLimits = map[string][2]int64{
	"nano": {2, 2}, "micro": {2, 2}, "small": {3, 4}, "medium": {2, 4},
	"large": {3, 10}, "xlarge": {4, 15}, "2xlarge": {4, 15}, "4xlarge": {8, 30},
	"8xlarge": {8, 30}, "9xlarge": {8, 30}, "12xlarge": {8, 30}, "16xlarge": {15, 50},
	"18xlarge": {15, 50}, "24xlarge": {15, 50}, "32xlarge": {15, 50}, "48xlarge": {15, 50},
}

var eniOverrides = map[string][2]int64{
	"t3.medium": {3, 6}, "t3a.medium": {3, 6}, "t4g.medium": {3, 6},
	"t3.large": {3, 12}, "t3a.large": {3, 12}, "t4g.large": {3, 12},
	"g4dn.xlarge": {3, 10}, "g4dn.2xlarge": {3, 10}, "g4dn.4xlarge": {3, 10}, "g4dn.8xlarge": {4, 15},
	"g4dn.16xlarge": {4, 15}, "g5.4xlarge": {8, 30}, "g5.8xlarge": {8, 30}, "g5.16xlarge": {8, 30},
	"g5.48xlarge": {7, 50}, "p3.16xlarge": {8, 30},
}

// networkBandwidth is the baseline network bandwidth in Mbps by size.
var networkBandwidth = map[string]int64{
	"nano": 32, "micro": 64, "small": 128, "medium": 500, "large": 750, "xlarge": 1250,
	"2xlarge": 2500, "4xlarge": 5000, "8xlarge": 10000, "9xlarge": 12000, "12xlarge": 15000,
	"16xlarge": 20000, "18xlarge": 25000, "24xlarge": 25000, "32xlarge": 50000, "48xlarge": 50000,
}

func roundPrice(p float64) float64 { return float64(int64(p*1e6+0.5)) / 1e6 }
