package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestCacheKeepsWhatJoinerReads: through the manager's cache (with
// state.CacheOptions, as joiner's own manager), pods and nodes arrive
// without what only the kubelet reads but with everything joiner reads;
// the API reader, which the nomination writer uses for managedFields,
// still sees the whole object.
func TestCacheKeepsWhatJoinerReads(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	pod := requestingPod(ns, "app", "", "500m")
	pod.Labels = map[string]string{"app": "web"}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "prod"}}
	pod.Spec.Containers[0].Command = []string{"/app", "--serve"}
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80}}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node"), Labels: map[string]string{"team": "a"}},
		Spec:       corev1.NodeSpec{ProviderID: "sim:///a/i-transform"},
	}
	env.Create(t, pod, node)
	node.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		Images:   []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}},
	}
	if err := env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}

	mgr := env.NewManager(t)
	test.StartManager(t, mgr)

	for _, tc := range []struct {
		name  string
		obj   client.Object
		key   client.ObjectKey
		check func(cached, whole client.Object) error
	}{
		{"pod", &corev1.Pod{}, client.ObjectKeyFromObject(pod), func(cached, whole client.Object) error {
			c, w := cached.(*corev1.Pod), whole.(*corev1.Pod)
			switch {
			case len(c.ManagedFields) != 0 || c.Spec.Containers[0].Env != nil || c.Spec.Containers[0].Command != nil:
				return fmt.Errorf("cached pod kept managedFields, env or command: %+v", c.Spec.Containers[0])
			case c.Labels["app"] != "web" || len(c.Spec.Tolerations) != len(w.Spec.Tolerations) || c.Spec.Containers[0].Ports[0].HostPort != 80:
				return fmt.Errorf("cached pod lost labels, tolerations or host ports: %+v", c)
			case c.Spec.Containers[0].Resources.Requests.Cpu().String() != "500m":
				return fmt.Errorf("cached pod requests %v, want 500m of cpu", c.Spec.Containers[0].Resources.Requests)
			case len(w.ManagedFields) == 0 || len(w.Spec.Containers[0].Env) != 1:
				return fmt.Errorf("the API reader's pod lacks managedFields or env")
			}
			return nil
		}},
		{"node", &corev1.Node{}, client.ObjectKeyFromObject(node), func(cached, whole client.Object) error {
			c, w := cached.(*corev1.Node), whole.(*corev1.Node)
			switch {
			case len(c.ManagedFields) != 0 || c.Status.Images != nil:
				return fmt.Errorf("cached node kept managedFields or images")
			case c.Labels["team"] != "a" || c.Spec.ProviderID != node.Spec.ProviderID || c.Status.Capacity.Cpu().String() != "4":
				return fmt.Errorf("cached node lost labels, provider ID or capacity: %+v", c)
			case len(w.ManagedFields) == 0 || len(w.Status.Images) != 1:
				return fmt.Errorf("the API reader's node lacks managedFields or images")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test.Eventually(t, 0, func(ctx context.Context) error {
				cached := tc.obj.DeepCopyObject().(client.Object)
				if err := mgr.GetClient().Get(ctx, tc.key, cached); err != nil {
					return err
				}
				whole := tc.obj.DeepCopyObject().(client.Object)
				if err := mgr.GetAPIReader().Get(ctx, tc.key, whole); err != nil {
					return err
				}
				return tc.check(cached, whole)
			})
		})
	}
}
