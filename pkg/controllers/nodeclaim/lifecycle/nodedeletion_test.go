package lifecycle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDeletingAManagedNodeDeletesItsNodeClaim(t *testing.T) {
	u := newUnit(t)
	nc := testNodeClaim("nd-1")
	nc.Spec.StartupTaints = nil
	nc, node := u.registered(nc, func(id string) *corev1.Node { return registeringNode("node-nd-1", id, "amd64") })
	if err := u.kube.Delete(u.ctx, node); err != nil {
		t.Fatal(err)
	}
	if _, err := u.ctrl.ReconcileNode(u.ctx, requestFor(node.Name)); err != nil {
		t.Fatal(err)
	}
	if !u.deleted(nc.Name) {
		t.Fatalf("deleting the Node deletes its NodeClaim")
	}
}
