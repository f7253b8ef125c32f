package test_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKwokHonoursReadinessGates: a kubelet's Ready is ContainersReady and
// every readiness gate of the pod's spec, and only the gate's owner (a load
// balancer controller, ...) sets the gate. kwok, standing in for the
// kubelet, must neither set a gate itself (a pod would be Ready that a real
// cluster keeps unready) nor let a condition that is not a gate keep a pod
// unready: kube-controller-manager resets a stale DisruptionTarget to False
// after a failed eviction, and such a pod, marked not ready while its node
// was silent, is Ready again on a live kubelet.
func TestKwokHonoursReadinessGates(t *testing.T) {
	const gate = "joiner.test/lb-ready"
	env := test.Env(t)
	ns := env.Namespace(t)
	nodeName := test.Name(t, "node")
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	pod := func(name string, gates ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: corev1.PodConditionType(g)})
		}
		return p
	}
	gated, plain := pod("gated", gate), pod("plain")
	env.Create(t, gated, plain)

	// expect checks p is Running with Ready=want.
	expect := func(ctx context.Context, p *corev1.Pod, want corev1.ConditionStatus) error {
		got := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %s, want Running", p.Name, got.Status.Phase)
		}
		if ready := readyStatus(got); ready != want {
			return fmt.Errorf("pod %s has Ready=%s, want %s (conditions %v)", p.Name, ready, want, got.Status.Conditions)
		}
		return nil
	}
	// setConditions writes conditions onto p's status as their owners
	// would, keeping the others.
	setConditions := func(p *corev1.Pod, conds ...corev1.PodCondition) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &corev1.Pod{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			for _, c := range conds {
				c.LastTransitionTime = metav1.Now()
				replaced := false
				for i := range got.Status.Conditions {
					if got.Status.Conditions[i].Type == c.Type {
						got.Status.Conditions[i], replaced = c, true
					}
				}
				if !replaced {
					got.Status.Conditions = append(got.Status.Conditions, c)
				}
			}
			return env.Client.Status().Update(t.Context(), got)
		}); err != nil {
			t.Fatalf("setting conditions of pod %s: %v", p.Name, err)
		}
	}

	test.Eventually(t, 0, func(ctx context.Context) error { return expect(ctx, plain, corev1.ConditionTrue) })
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error { return expect(ctx, gated, corev1.ConditionFalse) })

	// The gate's owner sets it: the pod becomes Ready.
	setConditions(gated, corev1.PodCondition{Type: gate, Status: corev1.ConditionTrue})
	test.Eventually(t, 0, func(ctx context.Context) error { return expect(ctx, gated, corev1.ConditionTrue) })

	// A stale DisruptionTarget reset to False, and Ready set False as the
	// node lifecycle controller does: the live kubelet reports Ready again.
	setConditions(plain,
		corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, Reason: "EvictionByEvictionAPI"},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady"})
	test.Eventually(t, 0, func(ctx context.Context) error { return expect(ctx, plain, corev1.ConditionTrue) })
}
