package v1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// HasDisruptedTaint matches the key and the effect, whatever the value.
func TestHasDisruptedTaint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		taints []corev1.Taint
		want   bool
	}{
		{"none", nil, false},
		{"the taint", []corev1.Taint{v1.DisruptedNoScheduleTaint}, true},
		{"among others", []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoExecute}, {Key: v1.TaintKeyDisrupted, Value: "x", Effect: corev1.TaintEffectNoSchedule}}, true},
		{"other effect", []corev1.Taint{{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoExecute}}, false},
		{"other key", []corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoSchedule}}, false},
	} {
		if got := v1.HasDisruptedTaint(tc.taints); got != tc.want {
			t.Errorf("%s: HasDisruptedTaint = %v, want %v", tc.name, got, tc.want)
		}
	}
}
