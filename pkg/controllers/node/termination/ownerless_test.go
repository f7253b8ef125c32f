package termination_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestOwnerlessPodEvictedIsNamedOnTheNode: the drain evicts a pod with no
// controller owner like any other (Karpenter v1 does not block on it
// either), and says on the Node and its NodeClaim that nothing will
// recreate it; a pod with a controller owner gets no such event.
func TestOwnerlessPodEvictedIsNamedOnTheNode(t *testing.T) {
	h := start(t)
	env := test.Env(t)
	ns := env.Namespace(t)
	nc, node := h.launch(t, test.Name(t, "ownerless"), nil)
	bare := runningPods(t, h.client, ns, "bare", node.Name, 1)[0]

	// Any existing object can be a pod's controller owner: the garbage
	// collector keeps the pod while its owner exists.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := h.client.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	owned := runningPods(t, h.client, ns, "owned", node.Name, 1)[0]
	patch := client.MergeFrom(owned.DeepCopy())
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	if err := h.client.Patch(t.Context(), owned, patch); err != nil {
		t.Fatal(err)
	}

	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	gone(t, h.client, bare)
	gone(t, h.client, owned)
	gone(t, h.client, nc)

	about := map[string]bool{}
	for _, e := range h.recorder.Events() {
		if e.Reason != events.OwnerlessPodEvicted {
			continue
		}
		if strings.Contains(e.Message, owned.Name) {
			t.Errorf("event names a pod with a controller owner: %s", e.Message)
		}
		want := "Pod " + ns + "/" + bare.Name + " was evicted while node " + node.Name + " drained; it has no controller owner, so nothing will recreate it"
		if e.Message != want {
			t.Errorf("event %q, want %q", e.Message, want)
		}
		switch r := e.Regarding.(type) {
		case *corev1.Node:
			about["node "+r.Name] = true
		case *v1.NodeClaim:
			about["nodeclaim "+r.Name] = true
		}
	}
	for _, want := range []string{"node " + node.Name, "nodeclaim " + nc.Name} {
		if !about[want] {
			t.Errorf("no %s event about the %s; events: %v", events.OwnerlessPodEvicted, want, h.recorder.Reasons())
		}
	}
}
