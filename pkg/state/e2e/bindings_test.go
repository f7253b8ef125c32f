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

func requestingPod(ns, name, nodeName, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "app", Image: "registry.invalid/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
}

// TestBindingsFollowPods: pods bound to a Node count on it with their
// requests; deleting one removes it; DaemonSets are listed as template
// pods.
func TestBindingsFollowPods(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node")}}
	env.Create(t, node)
	a := requestingPod(ns, "a", node.Name, "500m")
	b := requestingPod(ns, "b", node.Name, "250m")
	pending := requestingPod(ns, "pending", "", "8")
	env.Create(t, a, b, pending)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       requestingPod("", "", "", "100m").Spec,
			},
		},
	}
	env.Create(t, ds)

	cluster := startCluster(t)
	test.Eventually(t, 0, func(ctx context.Context) error {
		sn, ok := cluster.NodeByName(node.Name)
		if !ok {
			return fmt.Errorf("node %s not tracked", node.Name)
		}
		if len(sn.Pods) != 2 {
			return fmt.Errorf("node has %d pods, want 2", len(sn.Pods))
		}
		if got := sn.PodRequests()[corev1.ResourceCPU]; got.String() != "750m" {
			return fmt.Errorf("pod requests %s, want 750m", got.String())
		}
		for _, p := range cluster.DaemonSetPods() {
			if p.Namespace == ns && p.Name == "agent" {
				return nil
			}
		}
		return fmt.Errorf("daemonset %s/agent not listed", ns)
	})

	if err := env.Client.Delete(t.Context(), a, &clientGracePeriodZero); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		sn, _ := cluster.NodeByName(node.Name)
		if len(sn.Pods) != 1 || sn.Pods[0].Name != "b" {
			return fmt.Errorf("after deleting a, node pods = %d", len(sn.Pods))
		}
		return nil
	})
}
