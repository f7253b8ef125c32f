package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/lifecycle"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestStartupTaintFlow: launch, registration (labels synced, unregistered
// taint removed, finalizer and owner set), and initialization only after the
// startup taint is removed.
func TestStartupTaintFlow(t *testing.T) {
	h := start(t, options{})
	nc := h.nodeClaim(t)
	h.create(t, nc)

	got := h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionUnknown, lifecycle.ReasonStartupTaintsExist)
	requireCondition := func(typ string) {
		for _, c := range got.Status.Conditions {
			if c.Type == typ && c.Status == metav1.ConditionTrue {
				return
			}
		}
		t.Errorf("%s is not True: %v", typ, got.Status.Conditions)
	}
	requireCondition(v1.ConditionTypeLaunched)
	requireCondition(v1.ConditionTypeRegistered)
	if got.Status.ProviderID == "" || got.Status.NodeName == "" || got.Status.ImageID == "" || got.Labels[v1.LabelInstanceType] == "" {
		t.Fatalf("status/labels not hydrated: %+v %v", got.Status, got.Labels)
	}
	if !controllerutil.ContainsFinalizer(got, v1.TerminationFinalizer) {
		t.Errorf("nodeclaim lacks the termination finalizer")
	}

	node := h.node(t, got.Status.NodeName)
	if node.Labels[v1.LabelNodeRegistered] != "true" || node.Labels[v1.LabelNodePool] != h.pool {
		t.Errorf("node labels not synced: %v", node.Labels)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == v1.TaintKeyUnregistered {
			t.Errorf("the unregistered taint was not removed: %v", node.Spec.Taints)
		}
	}
	if !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) || len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != got.UID {
		t.Errorf("node lacks finalizer or owner reference: %v %v", node.Finalizers, node.OwnerReferences)
	}
	if node.Labels[v1.LabelNodeInitialized] == "true" {
		t.Fatalf("the node must not be initialized while its startup taint is present")
	}

	// The agent that owns the startup taint removes it (retrying on
	// conflicts with kwok and the controllers, which update the Node too).
	test.Eventually(t, 0, func(ctx context.Context) error {
		cur := &corev1.Node{}
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(node), cur); err != nil {
			return err
		}
		stored := cur.DeepCopy()
		var kept []corev1.Taint
		for _, taint := range cur.Spec.Taints {
			if taint.Key != startupTaintKey {
				kept = append(kept, taint)
			}
		}
		cur.Spec.Taints = kept
		return h.kube.Patch(ctx, cur, mergeFrom(stored))
	})
	got = h.condition(t, nc.Name, v1.ConditionTypeInitialized, metav1.ConditionTrue, "")
	h.condition(t, nc.Name, v1.ConditionTypeReady, metav1.ConditionTrue, "")
	if h.node(t, got.Status.NodeName).Labels[v1.LabelNodeInitialized] != "true" {
		t.Errorf("the node is not labelled initialized")
	}
}
