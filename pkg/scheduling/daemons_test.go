package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestDaemonPodsFor(t *testing.T) {
	plain := &corev1.Pod{}
	plain.Name = "plain"
	tolerant := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
	tolerant.Name = "tolerant"
	arm := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/arch": "arm64"}}}
	arm.Name = "arm"
	daemons := []*corev1.Pod{plain, tolerant, arm}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	tests := []struct {
		name   string
		labels map[string]string
		taints []corev1.Taint
		want   []string
	}{
		{"untainted amd64", map[string]string{"kubernetes.io/arch": "amd64"}, nil, []string{"plain", "tolerant"}},
		{"untainted arm64", map[string]string{"kubernetes.io/arch": "arm64"}, nil, []string{"plain", "tolerant", "arm"}},
		{"tainted", map[string]string{"kubernetes.io/arch": "amd64"}, []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}, []string{"tolerant"}},
		{"prefer-no-schedule taint takes every daemon", nil, []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}, []string{"plain", "tolerant"}},
		{"no-execute taint", nil, []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoExecute}}, []string{"tolerant"}},
		// Karpenter removes it at registration, before daemon pods land.
		{"unregistered taint keeps no daemon off", nil, []corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}}, []string{"plain", "tolerant"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(scheduling.DaemonPodsFor(daemons, tt.labels, tt.taints))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}
