package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

func TestUnhealthy(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	policies := []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
	}
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: conds}}
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	for _, tc := range []struct {
		name     string
		node     *corev1.Node
		want     corev1.NodeConditionType
		wantNext time.Duration
	}{
		{name: "ready", node: node(cond(corev1.NodeReady, corev1.ConditionTrue, time.Hour))},
		{name: "not ready within toleration", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, 20*time.Minute)), wantNext: 10 * time.Minute},
		{name: "not ready past toleration", node: node(cond(corev1.NodeReady, corev1.ConditionFalse, 31*time.Minute)), want: corev1.NodeReady},
		{name: "unknown past toleration", node: node(cond(corev1.NodeReady, corev1.ConditionUnknown, time.Hour)), want: corev1.NodeReady},
		{name: "accelerator has a shorter toleration",
			node: node(cond(corev1.NodeReady, corev1.ConditionTrue, time.Hour), cond("AcceleratedHardwareReady", corev1.ConditionFalse, 11*time.Minute)),
			want: "AcceleratedHardwareReady"},
		{name: "no conditions reported", node: node()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, next := Unhealthy(tc.node, policies, now)
			var got corev1.NodeConditionType
			if p != nil {
				got = p.ConditionType
			}
			if got != tc.want || next != tc.wantNext {
				t.Fatalf("Unhealthy = %q, %s; want %q, %s", got, next, tc.want, tc.wantNext)
			}
		})
	}
}

func TestRepairAllowed(t *testing.T) {
	for _, tc := range []struct {
		total, unhealthy int
		want             bool
	}{
		{1, 1, true},   // 20% of 1 rounds up to 1
		{5, 1, true},   // exactly 20%
		{5, 2, false},  // 40%
		{10, 2, true},  // 20%
		{10, 3, false}, // 30%
		{11, 3, true},  // 20% of 11 rounds up to 3
		{0, 0, true},
	} {
		if got := RepairAllowed(tc.total, tc.unhealthy); got != tc.want {
			t.Errorf("RepairAllowed(%d, %d) = %v, want %v", tc.total, tc.unhealthy, got, tc.want)
		}
	}
}
