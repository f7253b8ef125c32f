package test_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestKwokNodeSelector runs a control plane of its own whose kwok manages
// only labeled nodes, without scheduler or controller manager: a pod bound
// by hand to a managed node runs, an unlabeled node is left alone.
func TestKwokNodeSelector(t *testing.T) {
	t.Parallel()
	env := test.Start(t, controlplane.Options{Kwok: true, KwokNodeSelector: "joiner.sh/fake=true"})
	managed := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "managed"), Labels: map[string]string{"joiner.sh/fake": "true"}}}
	ignored := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "ignored")}}
	env.Create(t, managed, ignored)
	ns := env.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: test.Name(t, "pod")},
		Spec: corev1.PodSpec{
			NodeName:   managed.Name,
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
		},
	}
	env.Create(t, pod)

	test.Eventually(t, 0, func(ctx context.Context) error {
		var got corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning || got.Status.PodIP == "" {
			return fmt.Errorf("pod %s: phase %s, ip %q", got.Name, got.Status.Phase, got.Status.PodIP)
		}
		return nil
	})
	nodeIsReady := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var got corev1.Node
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
				return err
			}
			if !nodeReady(&got) {
				return fmt.Errorf("node %s is not Ready", name)
			}
			return nil
		}
	}
	test.Eventually(t, 0, nodeIsReady(managed.Name))
	// kwok made the managed node Ready long ago; a node it manages too would
	// have been handled at the same time.
	test.Consistently(t, time.Second, func(ctx context.Context) error {
		if nodeIsReady(ignored.Name)(ctx) == nil {
			return fmt.Errorf("kwok manages node %s, which its selector excludes", ignored.Name)
		}
		return nil
	})
}

// TestRestartAPIServer kills kube-apiserver and starts it again on the same
// address: the same client keeps working and the data (in etcd) is kept.
func TestRestartAPIServer(t *testing.T) {
	t.Parallel()
	env := test.Start(t, controlplane.Options{})
	ns := env.Namespace(t)
	if err := env.ControlPlane.RestartAPIServer(t.Context(), 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		return env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	})
}
