package e2e

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestDaemonSetPodTakesLimitRangeDefaults: a DaemonSet whose container sets
// only a memory limit, in a namespace whose LimitRange gives containers a
// default (or defaultRequest) of 2 cpu and 1Gi, counts as requesting 2 cpu
// and 1Gi, as the pod the DaemonSet controller creates will (Karpenter's
// regression suite: "should account for LimitRange Default/DefaultRequest
// on daemonSet pods"); a LimitRange created after the DaemonSet counts too.
func TestDaemonSetPodTakesLimitRangeDefaults(t *testing.T) {
	cases := map[string]corev1.LimitRangeItem{
		"default": {Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		"defaultRequest": {Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}
	cluster := startCluster(t)
	env := test.Env(t)
	for name, item := range cases {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "agent", Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
						}}},
					},
				},
			}
			env.Create(t, ds)
			// Without a LimitRange the memory limit is the request.
			expectDaemonRequests(t, cluster, ns, "0", "1Gi")
			env.Create(t, &corev1.LimitRange{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limits"},
				Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
			})
			expectDaemonRequests(t, cluster, ns, "2", "1Gi")
		})
	}
}

type daemonSetLister interface{ DaemonSetPods() []*corev1.Pod }

func expectDaemonRequests(t *testing.T, cluster daemonSetLister, ns, cpu, memory string) {
	t.Helper()
	test.Eventually(t, 0, func(ctx context.Context) error {
		for _, p := range cluster.DaemonSetPods() {
			if p.Namespace != ns {
				continue
			}
			req := p.Spec.Containers[0].Resources.Requests
			gotCPU, gotMem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
			if gotCPU.Cmp(resource.MustParse(cpu)) != 0 || gotMem.Cmp(resource.MustParse(memory)) != 0 {
				return fmt.Errorf("daemon pod requests cpu %s memory %s, want %s and %s", gotCPU.String(), gotMem.String(), cpu, memory)
			}
			return nil
		}
		return fmt.Errorf("daemonset %s/agent not listed", ns)
	})
}
