package test_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKwokHoldsPreStopHooks: kwok plays a kubelet whose containers stop at
// once on SIGTERM, except that a container with a preStop hook keeps the
// pod Running until its grace period ends, as a kubelet running the hook
// does (Karpenter's termination specs watch such a pod stay healthy through
// its grace period while its node drains).
func TestKwokHoldsPreStopHooks(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	nodeName := test.Name(t, "node")
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	pod := func(name string, hook bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{
				NodeName:                      nodeName,
				TerminationGracePeriodSeconds: ptr.To[int64](8),
				Containers:                    []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
			},
		}
		if hook {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 300"}}}}
		}
		return p
	}
	plain, hooked := pod("plain", false), pod("hooked", true)
	if err := env.Client.Create(t.Context(), plain); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), hooked); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{plain, hooked} {
		test.Eventually(t, 0, func(ctx context.Context) error {
			got := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", p.Name, got.Status.Phase)
			}
			return nil
		})
	}
	deleted := time.Now()
	for _, p := range []*corev1.Pod{plain, hooked} {
		if err := env.Client.Delete(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(p *corev1.Pod) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return errors.Join(err, fmt.Errorf("pod %s still exists", p.Name))
		}
	}
	test.Eventually(t, 5*time.Second, gone(plain))
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		got := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hooked), got); err != nil {
			return fmt.Errorf("the pod with a preStop hook went before its grace period: %w", err)
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("the pod with a preStop hook is %s during its grace period", got.Status.Phase)
		}
		return nil
	})
	test.Eventually(t, 20*time.Second, gone(hooked))
	if d := time.Since(deleted); d < 7*time.Second {
		t.Errorf("the pod with a preStop hook went %s after deletion, before its 8s grace period", d)
	}
}
