package catalog

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// overhead is what a node of vcpu cores and pods pod capacity reserves,
// following the EKS AMI's kube-reserved formulas and the kubelet's default
// eviction thresholds.
func overhead(vcpu, pods int64) scheduling.Overhead {
	return scheduling.Overhead{
		KubeReserved: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedMilliCPU(vcpu), resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
		},
		SystemReserved: corev1.ResourceList{},
		EvictionThreshold: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("100Mi"),
			// nodefs.available<10% of the root volume.
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(RootVolumeGiB*1024*1024*1024/10, resource.BinarySI),
		},
	}
}

// kubeReservedMilliCPU reserves 6% of the first core, 1% of the second,
// 0.5% of the third and fourth, and 0.25% of every core above four.
func kubeReservedMilliCPU(vcpu int64) int64 {
	var milli float64
	for core := int64(1); core <= vcpu; core++ {
		switch {
		case core == 1:
			milli += 60
		case core == 2:
			milli += 10
		case core <= 4:
			milli += 5
		default:
			milli += 2.5
		}
	}
	return int64(milli)
}
