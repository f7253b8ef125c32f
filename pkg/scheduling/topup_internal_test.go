package scheduling

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTopUpMovesIntoIdleRoom lays out a reservoir (an anchor and six
// 0.5-cpu pods, 3.1 cpu on a 4-cpu type) beside a small node by hand and
// holds topUp to what its rules allow: a pod moves into the small node's
// idle room only when it fits there without the node changing type and
// the node's pods admit it, and the reservoir then drops a type.
func TestTopUpMovesIntoIdleRoom(t *testing.T) {
	for _, tc := range []struct {
		name string
		// smallCPU is the request of the small node's second pod: 1 cpu
		// leaves 0.9 cpu idle on its 2-cpu type (room for one web pod),
		// 1.5 cpu leaves 0.4 (none).
		smallCPU string
		// refuse gives that pod a required hostname anti-affinity
		// against the web pods.
		refuse     bool
		before     float64
		after      float64
		smallAfter int // pods on the small node after
	}{
		// By hand: 0.4 + 0.2 before; one web pod moves, the reservoir
		// (2.6 cpu) drops to the 3-cpu type.
		{name: "a pod moves into the room", smallCPU: "1", before: 0.6, after: 0.5, smallAfter: 3},
		{name: "the receiver never grows", smallCPU: "1500m", before: 0.6, after: 0.6, smallAfter: 2},
		{name: "the receiver's anti-affinity refuses it", smallCPU: "1", refuse: true, before: 0.6, after: 0.6, smallAfter: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reservoir := []*corev1.Pod{anchorPod("a1", "100Mi")}
			for i := 0; i < 6; i++ {
				reservoir = append(reservoir, repackPod(fmt.Sprintf("web-%d", i), "500m", "512Mi", map[string]string{"app": "web"}))
			}
			guest := repackPod("guest", tc.smallCPU, "100Mi", map[string]string{"app": "guest"})
			if tc.refuse {
				guest.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
						TopologyKey:   corev1.LabelHostname,
					}},
				}}
			}
			small := []*corev1.Pod{anchorPod("a2", "100Mi"), guest}
			snap := &Snapshot{
				NodePools:     []*NodePool{{Name: "default"}},
				InstanceTypes: map[string][]*InstanceType{"default": repackCatalog()},
				Pods:          append(append([]*corev1.Pod(nil), reservoir...), small...),
			}
			sv, err := newSolver(snap, Options{MaxInstanceTypes: DefaultMaxInstanceTypes})
			if err != nil {
				t.Fatal(err)
			}
			r := placeByHand(t, sv, nil, reservoir...)
			s := placeByHand(t, sv, nil, small...)
			if got := sv.cost(); math.Abs(got-tc.before) > 1e-9 {
				t.Fatalf("hand-made plan costs %.2f, want %.2f", got, tc.before)
			}
			smallType := s.natural
			sv.topUp()
			if got := sv.cost(); math.Abs(got-tc.after) > 1e-9 {
				t.Errorf("after topUp the plan costs %.2f, want %.2f (%s | %s)", got, tc.after, podNames(r), podNames(s))
			}
			if len(s.pods) != tc.smallAfter {
				t.Errorf("the small node holds %s, want %d pods", podNames(s), tc.smallAfter)
			}
			if s.natural != smallType {
				t.Errorf("the small node moved from %s to %s", s.pool.types[smallType].it.Name, s.pool.types[s.natural].it.Name)
			}
			for _, n := range []*nodeState{r, s} {
				checkBooks(t, n)
				for _, p := range n.pods {
					if tc.refuse && n == s && p.Labels["app"] == "web" {
						t.Errorf("web pod %s landed beside the guest that refuses it", p.Name)
					}
				}
			}
		})
	}
}
