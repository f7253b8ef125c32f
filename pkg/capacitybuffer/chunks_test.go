package capacitybuffer_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
)

func chunk(cpu, mem string) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
	}}}}}}
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestChunks(t *testing.T) {
	scalable := &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "app"}
	for _, tc := range []struct {
		name      string
		spec      autoscalingv1beta1.CapacityBufferSpec
		workload  *int32
		quotas    []corev1.ResourceQuota
		want      int32
		wantQuota bool
		// wantLimits: spec.limits cut the count.
		wantLimits bool
	}{
		{name: "replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3)}, want: 3},
		{name: "percentage rounds up", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](20)}, workload: ptr.To[int32](11), want: 3},
		{name: "percentage at least one", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](1)}, workload: ptr.To[int32](2), want: 1},
		{name: "percentage of zero replicas", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](50)}, workload: ptr.To[int32](0), want: 0},
		{name: "larger of replicas and percentage", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Replicas: ptr.To[int32](2), Percentage: ptr.To[int32](50)}, workload: ptr.To[int32](10), want: 5},
		{name: "limits cap replicas", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: autoscalingv1beta1.Limits(rl("cpu", "5"))}, want: 2, wantLimits: true},
		{name: "limits alone", spec: autoscalingv1beta1.CapacityBufferSpec{Limits: autoscalingv1beta1.Limits(rl("cpu", "100", "memory", "16Gi"))}, want: 4},
		{name: "limits on another resource", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3), Limits: autoscalingv1beta1.Limits(rl("nvidia.com/gpu", "1"))}, want: 3},
		{name: "percentage ignored for a pod template", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1), Percentage: ptr.To[int32](100)}, workload: ptr.To[int32](9), want: 1},
		{
			name: "quota cuts", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](5)},
			quotas: []corev1.ResourceQuota{quota("team", rl("requests.cpu", "10"), rl("requests.cpu", "5"))}, want: 2, wantQuota: true,
		},
		{
			name: "quota on pods", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](5)},
			quotas: []corev1.ResourceQuota{quota("pods", rl("pods", "10"), rl("pods", "9"))}, want: 1, wantQuota: true,
		},
		{
			name: "quota with room", spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](2)},
			quotas: []corev1.ResourceQuota{quota("team", rl("cpu", "100", "memory", "1Ti"), rl("cpu", "1"))}, want: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capacitybuffer.Chunks(&tc.spec, chunk("2", "4Gi"), tc.workload, tc.quotas)
			if got.Chunks != tc.want || (got.Quota != "") != tc.wantQuota || (got.Limits != "") != tc.wantLimits {
				t.Fatalf("Chunks = %+v, want %d chunks (quota-limited %t, limited by spec.limits %t)", got, tc.want, tc.wantQuota, tc.wantLimits)
			}
		})
	}
}
