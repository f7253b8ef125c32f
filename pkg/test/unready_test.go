package test_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// A pod labelled kwok.x-k8s.io/stage=unhealthy runs and never becomes
// Ready (upstream's "PodDisruptionBudgets are unhealthy" drift spec relies
// on it); an unlabelled pod becomes Ready.
func TestKwokKeepsUnhealthyPodsUnready(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	nodeName := test.Name(t, "node")
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
	}
	healthy, unhealthy := pod("healthy", nil), pod("unhealthy", map[string]string{"kwok.x-k8s.io/stage": "unhealthy"})
	for _, p := range []*corev1.Pod{healthy, unhealthy} {
		if err := env.Client.Create(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	get := func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
		got := &corev1.Pod{}
		return got, env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		h, err := get(ctx, healthy)
		if err != nil {
			return err
		}
		u, err := get(ctx, unhealthy)
		if err != nil {
			return err
		}
		if h.Status.Phase != corev1.PodRunning || !ready(h) {
			return fmt.Errorf("healthy pod is %s, ready %v", h.Status.Phase, ready(h))
		}
		if u.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("unhealthy pod is %s", u.Status.Phase)
		}
		return nil
	})
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		u, err := get(ctx, unhealthy)
		if err != nil {
			return err
		}
		if ready(u) {
			return fmt.Errorf("the pod labelled kwok.x-k8s.io/stage=unhealthy became Ready")
		}
		return nil
	})
}
