package test_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKwokReportsPodsReadyAgainOnLiveNodes: when a node's heartbeats lapse,
// kube-controller-manager marks the Node not ready and sets its pods' Ready
// condition to False (chaos seed aws 3130: kube-apiserver restarted and
// kwok's Lease renewals stalled; the Nodes came back, their pods never did,
// and a PodDisruptionBudget stayed at 0 healthy). A kubelet that lives on
// reports its pods Ready again; a dead one leaves them unready.
//
// The test gives one node's Lease to a holder that never renews it (that
// node's kubelet died) and waits until the real node lifecycle controller
// has marked that node's pod not ready; then it pauses kwok until the
// controller has marked the other node's pods not ready too, and resumes
// kwok: the pod of the live node is Ready again; the dead node's pod, and a
// pod whose containers are not ready, stay unready.
func TestKwokReportsPodsReadyAgainOnLiveNodes(t *testing.T) {
	env := test.Start(t, controlplane.Options{
		ControllerManager: true,
		Controllers:       []string{"node-lifecycle-controller"},
		Kwok:              true,
		ExtraArgs: map[string][]string{
			// kwok renews its Leases every 5 s, well inside the 12 s after
			// which the node lifecycle controller finds a kubelet silent.
			"kube-controller-manager": {"--node-monitor-grace-period=12s", "--node-monitor-period=1s"},
			"kwok":                    {"--node-lease-duration-seconds=20"},
		},
	})
	ns := env.Namespace(t)
	live, dead := test.Name(t, "live"), test.Name(t, "dead")
	env.Create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: live}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: dead}})
	pod := func(name, node string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
		}
	}
	onLive, onDead := pod("on-live", live, nil), pod("on-dead", dead, nil)
	unhealthy := pod("unhealthy", live, map[string]string{"kwok.x-k8s.io/stage": "unhealthy"})
	env.Create(t, onLive, onDead, unhealthy)

	getPod := func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
		got := &corev1.Pod{}
		return got, env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
	}
	nodeReady := func(ctx context.Context, name string) (corev1.ConditionStatus, error) {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return "", err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status, nil
			}
		}
		return "", nil
	}
	// expect checks each pod's phase is Running and its Ready condition is want.
	expect := func(ctx context.Context, want corev1.ConditionStatus, pods ...*corev1.Pod) error {
		for _, p := range pods {
			got, err := getPod(ctx, p)
			if err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s, want Running", p.Name, got.Status.Phase)
			}
			if ready := readyStatus(got); ready != want {
				return fmt.Errorf("pod %s on node %s has Ready=%s, want %s", p.Name, p.Spec.NodeName, ready, want)
			}
		}
		return nil
	}
	leaseKey := func(node string) client.ObjectKey {
		return client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}
	}

	test.Eventually(t, 0, func(ctx context.Context) error {
		if err := expect(ctx, corev1.ConditionTrue, onLive, onDead); err != nil {
			return err
		}
		if err := expect(ctx, corev1.ConditionFalse, unhealthy); err != nil {
			return err
		}
		for _, node := range []string{live, dead} {
			lease := &coordinationv1.Lease{}
			if err := env.Client.Get(ctx, leaseKey(node), lease); err != nil {
				return fmt.Errorf("lease of node %s: %w", node, err)
			}
		}
		return nil
	})

	// The dead node's kubelet: its Lease goes to a holder that never renews
	// it and that kwok must not take over during the test.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := env.Client.Get(t.Context(), leaseKey(dead), lease); err != nil {
			return err
		}
		lease.Spec.HolderIdentity = ptr.To("kubelet-that-died")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		return env.Client.Update(t.Context(), lease)
	}); err != nil {
		t.Fatalf("taking the lease of node %s: %v", dead, err)
	}

	// notReady waits until the node lifecycle controller has found node's
	// kubelet silent and marked pods not ready.
	notReady := func(node string, pods ...*corev1.Pod) {
		t.Helper()
		test.Eventually(t, time.Minute, func(ctx context.Context) error {
			status, err := nodeReady(ctx, node)
			if err != nil {
				return err
			}
			if status == corev1.ConditionTrue {
				return fmt.Errorf("node %s is still Ready", node)
			}
			return expect(ctx, corev1.ConditionFalse, pods...)
		})
	}
	// kwok runs on meanwhile: it must leave the dead node and its pod alone.
	notReady(dead, onDead)

	resume, err := env.ControlPlane.Pause("kwok")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(resume)
	notReady(live, onLive, unhealthy)
	resume()

	test.Eventually(t, 0, func(ctx context.Context) error {
		status, err := nodeReady(ctx, live)
		if err != nil {
			return err
		}
		if status != corev1.ConditionTrue {
			return fmt.Errorf("node %s has Ready=%s after kwok resumed", live, status)
		}
		return expect(ctx, corev1.ConditionTrue, onLive)
	})
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		status, err := nodeReady(ctx, dead)
		if err != nil {
			return err
		}
		if status == corev1.ConditionTrue {
			return fmt.Errorf("node %s, whose kubelet died, became Ready", dead)
		}
		return expect(ctx, corev1.ConditionFalse, onDead, unhealthy)
	})
}

// readyStatus is the status of the pod's Ready condition ("" when it has none).
func readyStatus(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}
