package bootstrap

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKubeReservedCPUMillis(t *testing.T) {
	for _, tc := range []struct{ vcpus, want int64 }{{1, 60}, {2, 70}, {4, 80}, {8, 90}, {96, 310}} {
		if got := KubeReservedCPUMillis(tc.vcpus); got != tc.want {
			t.Errorf("KubeReservedCPUMillis(%d) = %d, want %d", tc.vcpus, got, tc.want)
		}
	}
}

func m5large() ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		VCpuInfo:    &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(2)},
		MemoryInfo:  &ec2types.MemoryInfo{SizeInMiB: aws.Int64(8192)},
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(3), Ipv4AddressesPerInterface: aws.Int32(10)},
	}
}

// TestResources: what an m5.large's kubelet reports, with the EKS images'
// defaults and with the user data's own reservations.
func TestResources(t *testing.T) {
	n := &Nodes{opts: Options{VMMemoryOverheadPercent: DefaultVMMemoryOverheadPercent}}
	cases := []struct {
		name                          string
		kubelet                       Kubelet
		pods, cpu, memory, allocMemMi string
	}{
		// 8192Mi less 7.5% (615Mi) = 7577Mi; 29 ENI-limited pods; kube-reserved
		// 70m and 11*29+255 = 574Mi; eviction 100Mi.
		{name: "image defaults", pods: "29", cpu: "1930m", memory: "7577Mi", allocMemMi: "6903Mi"},
		{name: "user data settings", kubelet: Kubelet{MaxPods: ptrInt32(110), KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"},
			SystemReserved: map[string]string{"memory": "100Mi"}, EvictionHard: map[string]string{"memory.available": "10%"}},
			pods: "110", cpu: "1500m", memory: "7577Mi", allocMemMi: "5695Mi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			capacity, alloc := n.resources(m5large(), &tc.kubelet, 20)
			check := func(what string, list corev1.ResourceList, name corev1.ResourceName, want string) {
				got := list[name]
				if w := resource.MustParse(want); got.Cmp(w) != 0 {
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			check("capacity", capacity, corev1.ResourcePods, tc.pods)
			check("capacity", capacity, corev1.ResourceMemory, tc.memory)
			check("allocatable", alloc, corev1.ResourceCPU, tc.cpu)
			// 10% of 7577Mi is 757.7Mi: compare to the MiB.
			got := alloc[corev1.ResourceMemory]
			if w := resource.MustParse(tc.allocMemMi); got.Value()/(1<<20) != w.Value()/(1<<20) {
				t.Errorf("allocatable memory = %dMi, want %s", got.Value()/(1<<20), tc.allocMemMi)
			}
		})
	}
}

func TestRoleARNWithoutPath(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:iam::123456789012:role/KarpenterNodeRole":          "arn:aws:iam::123456789012:role/KarpenterNodeRole",
		"arn:aws:iam::123456789012:role/nodes/eu/KarpenterNodeRole": "arn:aws:iam::123456789012:role/KarpenterNodeRole",
	} {
		if got := roleARNWithoutPath(in); got != want {
			t.Errorf("roleARNWithoutPath(%s) = %s, want %s", in, got, want)
		}
	}
}
