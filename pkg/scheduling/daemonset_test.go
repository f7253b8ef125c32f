package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestIsOwnedByDaemonSet(t *testing.T) {
	ref := func(kind string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "uid", Controller: controller}
	}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{name: "no owner"},
		{name: "DaemonSet controller", refs: []metav1.OwnerReference{ref("DaemonSet", ptr.To(true))}, want: true},
		{name: "DaemonSet owner that is not the controller", refs: []metav1.OwnerReference{ref("DaemonSet", nil)}},
		{name: "DaemonSet owner with controller false", refs: []metav1.OwnerReference{ref("DaemonSet", ptr.To(false))}},
		{name: "ReplicaSet controller", refs: []metav1.OwnerReference{ref("ReplicaSet", ptr.To(true))}},
		{name: "ReplicaSet controller beside a DaemonSet owner", refs: []metav1.OwnerReference{ref("DaemonSet", nil), ref("ReplicaSet", ptr.To(true))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: tc.refs}}
			if got := scheduling.IsOwnedByDaemonSet(p); got != tc.want {
				t.Errorf("IsOwnedByDaemonSet = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pending pod that only references a DaemonSet (no controller: true) is
// not a daemon pod: no DaemonSet controller will place it, so the solver
// must. The solver used to count any DaemonSet owner reference, while the
// provisioner (which hands it the pod) counted only the controller: the pod
// was dropped with neither a node nor a reason.
func TestPodReferencingADaemonSetIsPlaced(t *testing.T) {
	notController := func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "owner", UID: "uid"})
	}
	runCases(t, []semanticCase{
		{
			name: "owner reference without controller",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("adopted", "1", "", notController)))
			},
			check: all(wantNodes(1), func(t *testing.T, _ *scheduling.Snapshot, p *scheduling.Plan) {
				if len(p.NewNodeClaims[0].Pods) != 1 || p.NewNodeClaims[0].Pods[0].Name != "adopted" {
					t.Errorf("the new node holds %d pods, want the adopted pod", len(p.NewNodeClaims[0].Pods))
				}
			}),
		},
		{
			name: "controller reference",
			snap: func() *scheduling.Snapshot {
				return snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(pod("daemon", "1", "", ownedBy("DaemonSet"))))
			},
			check: wantNodes(0),
		},
	})
}
