package aws

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Extended resources an instance type can offer.
const (
	ResourceNVIDIAGPU       corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU          corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron       corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore   corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi     corev1.ResourceName = "habana.ai/gaudi"
	ResourceEFA             corev1.ResourceName = "vpc.amazonaws.com/efa"
	defaultPods                                 = 110
	gravitonCMAMiB                              = 64
	defaultEphemeralStorage                     = "20Gi"
)

// capacity computes an instance type's capacity as Karpenter does (§3.2).
func (p *Provider) capacity(info *ec2types.InstanceTypeInfo, nc *awsv1.EC2NodeClass, family string) corev1.ResourceList {
	vcpus := int64(0)
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		vcpus = int64(*info.VCpuInfo.DefaultVCpus)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(vcpus, resource.DecimalSI),
		corev1.ResourceMemory:           memory(info, p.opts.VMMemoryOverheadPercent),
		corev1.ResourcePods:             *resource.NewQuantity(pods(info, nc.Spec.Kubelet, family, p.opts.ReservedENIs), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: ephemeralStorage(info, nc, family),
	}
	if info.GpuInfo != nil {
		for _, g := range info.GpuInfo.Gpus {
			count := int64(aws.ToInt32(g.Count))
			switch strings.ToLower(aws.ToString(g.Manufacturer)) {
			case "nvidia":
				addQuantity(out, ResourceNVIDIAGPU, count)
			case "amd":
				addQuantity(out, ResourceAMDGPU, count)
			case "habana":
				addQuantity(out, ResourceHabanaGaudi, count)
			}
		}
	}
	if info.NeuronInfo != nil {
		for _, d := range info.NeuronInfo.NeuronDevices {
			count := int64(aws.ToInt32(d.Count))
			addQuantity(out, ResourceAWSNeuron, count)
			if d.CoreInfo != nil {
				addQuantity(out, ResourceAWSNeuronCore, count*int64(aws.ToInt32(d.CoreInfo.Count)))
			}
		}
	} else if info.InferenceAcceleratorInfo != nil {
		for _, a := range info.InferenceAcceleratorInfo.Accelerators {
			addQuantity(out, ResourceAWSNeuron, int64(aws.ToInt32(a.Count)))
		}
	}
	if n := info.NetworkInfo; n != nil && aws.ToBool(n.EfaSupported) && n.EfaInfo != nil {
		addQuantity(out, ResourceEFA, int64(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces)))
	}
	return out
}

func addQuantity(rl corev1.ResourceList, name corev1.ResourceName, n int64) {
	if n <= 0 {
		return
	}
	q := rl[name]
	q.Add(*resource.NewQuantity(n, resource.DecimalSI))
	rl[name] = q
}

// memory is the type's memory minus the VM overhead share, and minus the
// contiguous memory Graviton kernels reserve.
func memory(info *ec2types.InstanceTypeInfo, overheadPercent float64) resource.Quantity {
	mib := int64(0)
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		mib = *info.MemoryInfo.SizeInMiB
	}
	mib -= int64(math.Ceil(float64(mib) * overheadPercent))
	if typeArch(info) == "arm64" && info.ProcessorInfo != nil && strings.EqualFold(aws.ToString(info.ProcessorInfo.Manufacturer), "AWS") {
		mib -= gravitonCMAMiB
	}
	return *resource.NewQuantity(max(mib, 0)*1024*1024, resource.BinarySI)
}

// eniLimitedPods is how many pods the VPC CNI can address:
// ENIs × (IPs per ENI − 1) + 2, leaving out reserved ENIs.
func eniLimitedPods(info *ec2types.InstanceTypeInfo, reservedENIs int) int64 {
	n := info.NetworkInfo
	if n == nil {
		return defaultPods
	}
	enis := int64(aws.ToInt32(n.MaximumNetworkInterfaces))
	if idx := aws.ToInt32(n.DefaultNetworkCardIndex); int(idx) < len(n.NetworkCards) {
		if card := n.NetworkCards[idx]; card.MaximumNetworkInterfaces != nil {
			enis = int64(*card.MaximumNetworkInterfaces)
		}
	}
	enis -= int64(reservedENIs)
	if enis <= 0 {
		return 0
	}
	return enis*(int64(aws.ToInt32(n.Ipv4AddressesPerInterface))-1) + 2
}

// pods is the kubelet's max-pods: spec.kubelet.maxPods, else the ENI limit
// for families with VPC CNI pod density, else 110; capped by podsPerCore
// where the family supports it.
func pods(info *ec2types.InstanceTypeInfo, kc *awsv1.KubeletConfiguration, family string, reservedENIs int) int64 {
	var count int64
	switch {
	case kc != nil && kc.MaxPods != nil:
		count = int64(*kc.MaxPods)
	case awsv1.IsWindows(family):
		count = defaultPods
	default:
		count = eniLimitedPods(info, reservedENIs)
	}
	if kc != nil && kc.PodsPerCore != nil && *kc.PodsPerCore > 0 && family != awsv1.AMIFamilyBottlerocket && info.VCpuInfo != nil {
		count = min(count, int64(*kc.PodsPerCore)*int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus)))
	}
	return count
}

// ephemeralStorage is the root volume's size, or the sum of local NVMe
// disks under the RAID0 instance store policy.
func ephemeralStorage(info *ec2types.InstanceTypeInfo, nc *awsv1.EC2NodeClass, family string) resource.Quantity {
	if p := nc.Spec.InstanceStorePolicy; p != nil && *p == awsv1.InstanceStorePolicyRAID0 {
		if gib := localNVMeGiB(info); gib > 0 {
			return *resource.NewQuantity(gib*1024*1024*1024, resource.BinarySI)
		}
	}
	bdms := nc.Spec.BlockDeviceMappings
	var root *awsv1.BlockDeviceMapping
	for _, b := range bdms {
		if b != nil && b.RootVolume {
			root = b
		}
	}
	if root == nil && len(bdms) > 0 {
		// Without a rootVolume mapping Karpenter uses the family's root
		// device: the last mapping for Bottlerocket (its data volume),
		// the first otherwise.
		if family == awsv1.AMIFamilyBottlerocket {
			root = bdms[len(bdms)-1]
		} else {
			root = bdms[0]
		}
	}
	if root != nil && root.EBS != nil && root.EBS.VolumeSize != nil {
		return root.EBS.VolumeSize.DeepCopy()
	}
	if awsv1.IsWindows(family) {
		return resource.MustParse("50Gi")
	}
	return resource.MustParse(defaultEphemeralStorage)
}

func localNVMeGiB(info *ec2types.InstanceTypeInfo) int64 {
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		return *s.TotalSizeInGB
	}
	return 0
}

// overhead is kube-reserved, system-reserved and the eviction threshold
// as Karpenter computes them; the node class's kubelet values win per key.
func overhead(capacity corev1.ResourceList, kc *awsv1.KubeletConfiguration) scheduling.Overhead {
	cpu := capacity.Cpu().MilliValue()
	var cpuReserved float64
	for _, r := range []struct {
		start, end int64
		share      float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, math.MaxInt64, 0.0025}} {
		if cpu > r.start {
			cpuReserved += float64(min(cpu, r.end)-r.start) * r.share
		}
	}
	podCount := capacity.Pods().Value()
	kube := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(cpuReserved), resource.DecimalSI),
		corev1.ResourceMemory:           resource.MustParse(fmt.Sprintf("%dMi", 11*podCount+255)),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	system := corev1.ResourceList{}
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: percentOf(capacity[corev1.ResourceEphemeralStorage], 10),
	}
	if kc != nil {
		override(kube, kc.KubeReserved)
		override(system, kc.SystemReserved)
		for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
			v, ok := kc.EvictionHard[signal]
			if !ok {
				continue
			}
			if pct, isPct := strings.CutSuffix(v, "%"); isPct {
				if f, err := strconv.ParseFloat(pct, 64); err == nil {
					eviction[name] = percentOf(capacity[name], f)
				}
			} else if q, err := resource.ParseQuantity(v); err == nil {
				eviction[name] = q
			}
		}
	}
	return scheduling.Overhead{KubeReserved: kube, SystemReserved: system, EvictionThreshold: eviction}
}

func override(rl corev1.ResourceList, values map[string]string) {
	for k, v := range values {
		if q, err := resource.ParseQuantity(v); err == nil {
			rl[corev1.ResourceName(k)] = q
		}
	}
}

func percentOf(q resource.Quantity, pct float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*pct/100)), resource.BinarySI)
}

// instanceTypeScheme splits "m5dn.xlarge" into category "m", generation
// "5", and the family and size around the dot.
var instanceTypeScheme = regexp.MustCompile(`^([a-z\-]+?)([0-9]+)([a-z0-9\-]*)\.(.+)$`)

func familyOf(name string) string {
	family, _, _ := strings.Cut(name, ".")
	return family
}

// requirements are the labels every instance of the type carries: the
// well-known ones and every karpenter.k8s.aws/* label of reference §1.10.
func (p *Provider) requirements(info *ec2types.InstanceTypeInfo, family, arch string) map[string][]string {
	name := string(info.InstanceType)
	os := "linux"
	if awsv1.IsWindows(family) {
		os = "windows"
	}
	r := map[string][]string{
		v1.LabelInstanceType:                   {name},
		v1.LabelArch:                           {arch},
		v1.LabelOS:                             {os},
		v1.LabelTopologyRegion:                 {p.opts.Region},
		v1.LabelAWSInstanceFamily:              {familyOf(name)},
		v1.LabelAWSInstanceHypervisor:          {string(info.Hypervisor)},
		v1.LabelAWSInstanceTenancy:             {"default"},
		v1.LabelAWSInstanceEncryptionInTransit: {strconv.FormatBool(info.NetworkInfo != nil && aws.ToBool(info.NetworkInfo.EncryptionInTransitSupported))},
	}
	set := func(key string, v string) {
		if v != "" {
			r[key] = []string{v}
		} else {
			r[key] = nil
		}
	}
	if m := instanceTypeScheme.FindStringSubmatch(name); m != nil {
		set(v1.LabelAWSInstanceCategory, m[1])
		set(v1.LabelAWSInstanceGeneration, m[2])
		set(v1.LabelAWSInstanceSize, m[4])
	} else {
		_, size, _ := strings.Cut(name, ".")
		set(v1.LabelAWSInstanceSize, size)
		set(v1.LabelAWSInstanceCategory, "")
		set(v1.LabelAWSInstanceGeneration, "")
	}
	set(v1.LabelAWSInstanceCapabilityFlex, "")
	if strings.HasSuffix(familyOf(name), "-flex") {
		set(v1.LabelAWSInstanceCapabilityFlex, "true")
	}
	if info.VCpuInfo != nil {
		set(v1.LabelAWSInstanceCPU, strconv.Itoa(int(aws.ToInt32(info.VCpuInfo.DefaultVCpus))))
	}
	set(v1.LabelAWSInstanceCPUManufacturer, "")
	set(v1.LabelAWSInstanceCPUSustainedClock, "")
	if pi := info.ProcessorInfo; pi != nil {
		set(v1.LabelAWSInstanceCPUManufacturer, strings.ToLower(aws.ToString(pi.Manufacturer)))
		if pi.SustainedClockSpeedInGhz != nil {
			set(v1.LabelAWSInstanceCPUSustainedClock, strconv.Itoa(int(math.Round(*pi.SustainedClockSpeedInGhz*1000))))
		}
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		set(v1.LabelAWSInstanceMemory, strconv.FormatInt(*info.MemoryInfo.SizeInMiB, 10))
	}
	set(v1.LabelAWSInstanceEBSBandwidth, "")
	if e := info.EbsInfo; e != nil && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		set(v1.LabelAWSInstanceEBSBandwidth, strconv.Itoa(int(*e.EbsOptimizedInfo.MaximumBandwidthInMbps)))
	}
	set(v1.LabelAWSInstanceNetworkBandwidth, "")
	if n := info.NetworkInfo; n != nil && len(n.NetworkCards) > 0 && n.NetworkCards[0].BaselineBandwidthInGbps != nil {
		set(v1.LabelAWSInstanceNetworkBandwidth, strconv.Itoa(int(math.Round(*n.NetworkCards[0].BaselineBandwidthInGbps*1000))))
	}
	set(v1.LabelAWSInstanceLocalNVMe, "")
	if gib := localNVMeGiB(info); gib > 0 {
		set(v1.LabelAWSInstanceLocalNVMe, strconv.FormatInt(gib, 10))
	}
	for _, k := range []string{v1.LabelAWSInstanceGPUName, v1.LabelAWSInstanceGPUManufacturer, v1.LabelAWSInstanceGPUCount, v1.LabelAWSInstanceGPUMemory,
		v1.LabelAWSInstanceAcceleratorName, v1.LabelAWSInstanceAcceleratorManufacturer, v1.LabelAWSInstanceAcceleratorCount} {
		set(k, "")
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) == 1 {
		gpu := g.Gpus[0]
		set(v1.LabelAWSInstanceGPUName, strings.ToLower(aws.ToString(gpu.Name)))
		set(v1.LabelAWSInstanceGPUManufacturer, strings.ToLower(aws.ToString(gpu.Manufacturer)))
		set(v1.LabelAWSInstanceGPUCount, strconv.Itoa(int(aws.ToInt32(gpu.Count))))
		if gpu.MemoryInfo != nil {
			set(v1.LabelAWSInstanceGPUMemory, strconv.Itoa(int(aws.ToInt32(gpu.MemoryInfo.SizeInMiB))))
		}
	}
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) == 1 {
		d := n.NeuronDevices[0]
		set(v1.LabelAWSInstanceAcceleratorName, strings.ToLower(aws.ToString(d.Name)))
		set(v1.LabelAWSInstanceAcceleratorManufacturer, "aws")
		set(v1.LabelAWSInstanceAcceleratorCount, strconv.Itoa(int(aws.ToInt32(d.Count))))
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		acc := a.Accelerators[0]
		set(v1.LabelAWSInstanceAcceleratorName, strings.ToLower(aws.ToString(acc.Name)))
		set(v1.LabelAWSInstanceAcceleratorManufacturer, strings.ToLower(aws.ToString(acc.Manufacturer)))
		set(v1.LabelAWSInstanceAcceleratorCount, strconv.Itoa(int(aws.ToInt32(acc.Count))))
	}
	return r
}
