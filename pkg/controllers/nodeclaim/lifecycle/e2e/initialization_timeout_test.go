package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
	"github.com/joiner-dev/joiner/pkg/test"
)

// nominations is the provisioner's record of which pods wait for which
// NodeClaim, filled in by the test.
type nominations struct {
	mu   sync.Mutex
	pods map[string][]types.NamespacedName
}

func (n *nominations) PodsNominatedTo(nodeClaim string) []types.NamespacedName {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pods[nodeClaim]
}

func (n *nominations) nominate(nodeClaim string, pod types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.pods == nil {
		n.pods = map[string][]types.NamespacedName{}
	}
	n.pods[nodeClaim] = append(n.pods[nodeClaim], pod)
}

const initializationTTL = 3 * time.Second

// TestInitializationTimeout: a NodeClaim that registers but is never
// initialized is deleted after the initialization TTL, and the event on it,
// its NodePool and the pod nominated to it names the check that failed. The
// NodePool keeps a record of the failure.
func TestInitializationTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		faults   *simv1alpha1.Faults
		claim    func(nc *v1.NodeClaim)
		reason   string
		mentions []string
	}{
		{
			// kwok does not manage the Node, so no kubelet reports it Ready.
			name:     "node never ready",
			claim:    func(nc *v1.NodeClaim) { delete(nc.Labels, kwokLabel); nc.Spec.StartupTaints = nil },
			reason:   lifecycle.ReasonNodeNotReady,
			mentions: []string{"never became Ready", "journalctl -u kubelet"},
		},
		{
			// Nothing removes the startup taint.
			name:     "startup taint left",
			reason:   lifecycle.ReasonStartupTaintsExist,
			mentions: []string{startupTaintKey + ":NoSchedule", "DaemonSet that owns each taint"},
		},
		{
			// The bootstrap lost --register-with-taints: joiner added the
			// taint later and the agent never removed it.
			name:     "startup taint the bootstrap dropped",
			faults:   &simv1alpha1.Faults{DropStartupTaints: true},
			reason:   lifecycle.ReasonStartupTaintsExist,
			mentions: []string{startupTaintKey + ":NoSchedule", "registered without the startup taint(s)", "--register-with-taints"},
		},
		{
			// The GPU's device plugin never runs.
			name:   "gpu never registered",
			faults: &simv1alpha1.Faults{ExtendedResourcesMissing: true},
			claim: func(nc *v1.NodeClaim) {
				nc.Spec.StartupTaints = nil
				nc.Spec.Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
			},
			reason:   lifecycle.ReasonResourceNotRegistered,
			mentions: []string{"expected resources never appeared", "nvidia.com/gpu", "device plugin"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noms := &nominations{}
			h := start(t, options{faults: tc.faults, initializationTTL: initializationTTL, nominations: noms})
			nc := h.nodeClaim(t)
			if tc.claim != nil {
				tc.claim(nc)
			}
			pod := pendingPod(t)
			noms.nominate(nc.Name, client.ObjectKeyFromObject(pod))
			// The test's own finalizer keeps the deleted NodeClaim readable,
			// so its Initialized condition is always checked.
			nc.Finalizers = append(nc.Finalizers, holdFinalizer)
			h.create(t, nc)
			h.condition(t, nc.Name, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")

			// Deleted with the failed check on its Initialized condition.
			test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
				got := &v1.NodeClaim{}
				if err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
					return fmt.Errorf("reading nodeclaim %s held by %s: %w", nc.Name, holdFinalizer, err)
				}
				if got.DeletionTimestamp == nil {
					return fmt.Errorf("nodeclaim %s not deleted yet", nc.Name)
				}
				if c := got.StatusConditions().Get(v1.ConditionTypeInitialized); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
					return fmt.Errorf("deleting nodeclaim's Initialized condition is %+v, want False/%s", c, tc.reason)
				}
				return nil
			})
			release(t, h.kube, nc)
			for _, regarding := range []string{nc.Name, h.pool} {
				requireMentions(t, h.event(t, regarding, events.InitializationTimeout), append(tc.mentions, "3s")...)
			}
			requireMentions(t, h.event(t, pod.Name, events.InitializationTimeout), "nodeclaim/"+nc.Name, tc.reason)

			np := &v1.NodePool{}
			if err := h.kube.Get(t.Context(), client.ObjectKey{Name: h.pool}, np); err != nil {
				t.Fatal(err)
			}
			record, err := launchhealth.Get(np)
			if err != nil || record.LastFailure == nil || len(record.Backoffs) != 1 {
				t.Fatalf("no initialization failure recorded on the NodePool: %v (%v)", err, np.Annotations)
			}
			if f := record.LastFailure; f.NodeClaim != nc.Name || f.Reason != tc.reason {
				t.Errorf("failure record %+v, want nodeclaim %s reason %s", f, nc.Name, tc.reason)
			}
			if b := record.Backoffs[0]; b.InstanceType == "" || b.ImageID == "" || b.Reason != tc.reason {
				t.Errorf("back-off %+v, want the instance type and image, reason %s", b, tc.reason)
			}
		})
	}
}

// pendingPod creates a pod no node runs (no scheduler binds it).
func pendingPod(t *testing.T) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "pod"), Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	test.Env(t).Create(t, pod)
	return pod
}

// holdFinalizer is the test's own finalizer on a NodeClaim it must read
// after joiner deleted it.
const holdFinalizer = "test.joiner.dev/hold"

// release removes holdFinalizer so the deleted NodeClaim can go.
func release(t *testing.T, kube client.Client, nc *v1.NodeClaim) {
	t.Helper()
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return client.IgnoreNotFound(err)
		}
		stored := got.DeepCopy()
		got.Finalizers = slices.DeleteFunc(got.Finalizers, func(f string) bool { return f == holdFinalizer })
		return kube.Patch(ctx, got, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
}
