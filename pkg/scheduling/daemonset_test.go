package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

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
