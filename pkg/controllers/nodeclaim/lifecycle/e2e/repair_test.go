package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/node/health"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

func (h *harness) registerRepair(t *testing.T, mgr manager.Manager, recorder events.Recorder) {
	t.Helper()
	c, err := health.NewController(health.Options{Client: mgr.GetClient(), CloudProvider: h.cloud, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(mgr); err != nil {
		t.Fatal(err)
	}
}

// TestNodeRepair: a Node whose Ready condition has been False for longer
// than the simulated cloud's 30-minute toleration is repaired: its
// NodeClaim is deleted with the termination deadline set to now.
func TestNodeRepair(t *testing.T) {
	h := start(t, options{repair: true})
	nc := h.nodeClaim(t)
	delete(nc.Labels, kwokLabel) // the test plays the kubelet
	nc.Spec.StartupTaints = nil
	h.create(t, nc)
	got := h.condition(t, nc.Name, v1.ConditionTypeRegistered, metav1.ConditionTrue, "")
	h.updateNodeStatus(t, got.Status.NodeName, func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour)),
		}}
	})
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		cur := &v1.NodeClaim{}
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.DeletionTimestamp == nil {
			return fmt.Errorf("nodeclaim %s not deleted yet", nc.Name)
		}
		if cur.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] == "" {
			return fmt.Errorf("nodeclaim %s deleted without a termination deadline", nc.Name)
		}
		return nil
	})
	requireMentions(t, h.event(t, got.Status.NodeName, events.Unhealthy), "Ready=False", "30m0s", nc.Name)
}
