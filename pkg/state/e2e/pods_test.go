package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestPodCacheReadsTheCachesPods: PodCache lists the unbound pods and all
// pods as the informer cache holds them (the very objects, no copy), and
// follows the cache as pods come and go.
func TestPodCacheReadsTheCachesPods(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "node")}}
	bound := requestingPod(ns, "bound", node.Name, "500m")
	pending := requestingPod(ns, "pending", "", "500m")
	env.Create(t, node, bound, pending)

	mgr := env.NewManager(t)
	pods, err := state.NewPodCache(t.Context(), mgr.GetCache())
	if err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)

	// names lists the names of the namespace's pods among list.
	names := func(list []*corev1.Pod) []string {
		var out []string
		for _, p := range list {
			if p.Namespace == ns {
				out = append(out, p.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	check := func(wantUnbound, wantAll []string) {
		t.Helper()
		test.Eventually(t, 0, func(ctx context.Context) error {
			unbound, err := pods.Unbound(ctx)
			if err != nil {
				return err
			}
			all, err := pods.All(ctx)
			if err != nil {
				return err
			}
			if got := names(unbound); !slices.Equal(got, wantUnbound) {
				return fmt.Errorf("unbound pods %v, want %v", got, wantUnbound)
			}
			if got := names(all); !slices.Equal(got, wantAll) {
				return fmt.Errorf("all pods %v, want %v", got, wantAll)
			}
			return nil
		})
	}
	check([]string{"pending"}, []string{"bound", "pending"})

	unbound, err := pods.Unbound(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(unbound, func(p *corev1.Pod) bool { return p.Namespace == ns && p.Name == "pending" })
	cached := &corev1.Pod{}
	if err := mgr.GetClient().Get(t.Context(), client.ObjectKeyFromObject(pending), cached, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	if &unbound[i].Spec.Containers[0] != &cached.Spec.Containers[0] {
		t.Errorf("Unbound returned a copy of the cache's pod")
	}

	if err := env.Client.Delete(t.Context(), pending, &clientGracePeriodZero); err != nil {
		t.Fatal(err)
	}
	check(nil, []string{"bound"})
}
