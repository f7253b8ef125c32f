package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func virtual(p *corev1.Pod) {
	p.Annotations = map[string]string{autoscalingv1beta1.AnnotationVirtualPod: "true"}
}

// TestVirtualPodsGoLast: a CapacityBuffer's virtual pod has the lowest
// priority. With room for one 2-cpu pod on an existing node, the real pod
// takes it and the virtual pod gets the new node, whichever sorts first
// by name or size.
func TestVirtualPodsGoLast(t *testing.T) {
	for _, tc := range []struct {
		name      string
		real, buf *corev1.Pod
	}{
		{"virtual sorts first by name", pod("b-real", "2", "1Gi"), pod("a-virtual", "2", "1Gi", virtual)},
		{"virtual is cpu-heavier (balanced order takes it first)", pod("a-real", "1", "4Gi"), pod("b-virtual", "2", "1Gi", virtual)},
		{"same shape and labels", pod("a", "2", "1Gi"), pod("b", "2", "1Gi", virtual)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), []*corev1.Pod{tc.buf, tc.real})
			snap.Nodes = []*scheduling.ExistingNode{{
				Name: "n1", Initialized: true,
				Labels:      map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
				Allocatable: list("cpu", "2500m", "memory", "8Gi", "pods", "20"),
			}}
			plan, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Existing) != 1 || len(plan.Existing[0].Pods) != 1 || plan.Existing[0].Pods[0] != tc.real {
				t.Fatalf("existing node got %v, want only the real pod %s", plan.Existing, tc.real.Name)
			}
			if len(plan.NewNodeClaims) != 1 || len(plan.NewNodeClaims[0].Pods) != 1 || plan.NewNodeClaims[0].Pods[0] != tc.buf {
				t.Fatalf("new nodes %v, want one for the virtual pod", plan.NewNodeClaims)
			}
		})
	}
}
