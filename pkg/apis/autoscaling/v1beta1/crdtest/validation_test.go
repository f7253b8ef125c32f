package crdtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestValidation: the API server refuses what Karpenter's CapacityBuffer
// CRD refuses, with its message, and defaults the strategy.
func TestValidation(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	for _, tc := range []struct {
		name string
		spec autoscalingv1beta1.CapacityBufferSpec
		want string // "" when accepted
	}{
		{name: "pod template with replicas", spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}, Replicas: ptr.To[int32](2)}},
		{name: "pod template with limits", spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}, Limits: autoscalingv1beta1.Limits{"cpu": resource.MustParse("4")}}},
		{name: "scalable ref with percentage", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "d"}, Percentage: ptr.To[int32](20)}},
		{name: "pod template alone", spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}}, want: "If podTemplateRef is set, replicas or limits must also be set"},
		{name: "both refs", spec: autoscalingv1beta1.CapacityBufferSpec{
			PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}, ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "d"}, Replicas: ptr.To[int32](1),
		}, want: "You must define either PodTemplateRef or ScalableRef, but not both"},
		{name: "negative replicas", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "d"}, Replicas: ptr.To[int32](-1)}, want: "spec.replicas in body should be greater than or equal to 0"},
		{name: "scalable ref without a kind", spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Name: "d"}, Replicas: ptr.To[int32](1)}, want: "spec.scalableRef.kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "cb"), Namespace: ns}, Spec: tc.spec}
			err := env.Client.Create(t.Context(), cb)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				got := &autoscalingv1beta1.CapacityBuffer{}
				if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cb), got); err != nil {
					t.Fatal(err)
				}
				if s := ptr.Deref(got.Spec.ProvisioningStrategy, ""); s != autoscalingv1beta1.ProvisioningStrategyActiveCapacity {
					t.Fatalf("provisioningStrategy defaulted to %q", s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
