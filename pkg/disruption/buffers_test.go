package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/disruption"
)

// TestBufferRoomIsNotEmpty: a CapacityBuffer's virtual pod, pending in the
// snapshot, is bound where the provisioner would place it: that node is
// not empty and stays, the other empty node goes. Without the buffer both
// go.
func TestBufferRoomIsNotEmpty(t *testing.T) {
	for _, tc := range []struct {
		name      string
		buffered  bool
		wantGone  int
		wantEmpty int
	}{
		{name: "with a buffer chunk", buffered: true, wantGone: 1, wantEmpty: 1},
		{name: "without", wantGone: 2, wantEmpty: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, pool(), node{name: "a", it: "c4"}, node{name: "b", it: "c4"})
			if tc.buffered {
				chunk := pod("buffer-0", "2", func(p *corev1.Pod) {
					p.Annotations = map[string]string{autoscalingv1beta1.AnnotationVirtualPod: "true"}
					p.Status.Phase = corev1.PodPending
				})
				in.Cluster.Pods = append(in.Cluster.Pods, chunk)
			}
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			// The command may also shrink the buffered node (consolidation
			// composed after emptiness); what counts is the empty nodes it
			// deletes.
			gone, empty := 0, 0
			for _, v := range d.Verdicts {
				if v.Empty {
					empty++
					if d.Command != nil && slices.Contains(d.Command.Candidates, v.Node) {
						gone++
					}
				}
			}
			if gone != tc.wantGone || empty != tc.wantEmpty {
				t.Fatalf("emptiness takes %d node(s) with %d empty, want %d and %d", gone, empty, tc.wantGone, tc.wantEmpty)
			}
			if len(in.Nodes[0].Pods)+len(in.Nodes[1].Pods) != 0 {
				t.Fatal("Decide changed its input's nodes")
			}
		})
	}
}
