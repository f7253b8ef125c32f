package pods_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
)

func TestDaemonSetPod(t *testing.T) {
	containerDefaults := corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Default:        corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}}}
	podLimits := corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypePod,
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
	}}}}
	for _, tc := range []struct {
		name        string
		resources   corev1.ResourceRequirements
		limitRanges []corev1.LimitRange
		wantCPU     string
		wantMemory  string
	}{
		{name: "its own requests", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}, wantCPU: "100m", wantMemory: "0"},
		{name: "a limit without a request requests it", resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}, wantCPU: "0", wantMemory: "64Mi"},
		{name: "container defaults fill what it leaves out", limitRanges: []corev1.LimitRange{containerDefaults}, wantCPU: "2", wantMemory: "1Gi"},
		{name: "its own values win over the defaults", resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}, limitRanges: []corev1.LimitRange{containerDefaults}, wantCPU: "10m", wantMemory: "1Gi"},
		{name: "pod-type limit ranges give containers nothing", limitRanges: []corev1.LimitRange{podLimits}, wantCPU: "0", wantMemory: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", UID: "ds-uid"},
				Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Resources: tc.resources}}},
				}},
			}
			p := pods.DaemonSetPod(ds, tc.limitRanges)
			if p.Namespace != "kube-system" || p.Name != "agent" || p.Labels["app"] != "agent" {
				t.Errorf("pod %s/%s labels %v: want kube-system/agent with the template's labels", p.Namespace, p.Name, p.Labels)
			}
			if !pods.IsOwnedByDaemonSet(p) || pods.ControllerOf(p).UID != "ds-uid" {
				t.Errorf("owner references %v: want the DaemonSet as controller", p.OwnerReferences)
			}
			req := pods.Requests(p)
			if got := req[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.wantCPU)) != 0 {
				t.Errorf("cpu request %s, want %s", got.String(), tc.wantCPU)
			}
			if got := req[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.wantMemory)) != 0 {
				t.Errorf("memory request %s, want %s", got.String(), tc.wantMemory)
			}
			if len(ds.Spec.Template.Spec.Containers[0].Resources.Requests) != len(tc.resources.Requests) {
				t.Error("the DaemonSet's template was changed")
			}
		})
	}
}
