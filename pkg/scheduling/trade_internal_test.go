package scheduling

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTradeDropsANodeForSeveralSmallerPods lays out by hand a node 100 MiB
// over the 1-cpu type (an anchor and two 1 GiB pods on the 2-cpu type)
// beside a node whose nine 400 MiB pods leave it 396 MiB idle: no node
// has room for a 1 GiB pod and no exchange of one pod for one frees it
// (a 400 MiB pod in return leaves 4,324 MiB on 4,096), but two 400 MiB
// pods in return for one 1 GiB pod fit both nodes, and the first drops to
// the 1-cpu type. trade makes that, and nothing where a placement refuses
// it or the other node would have to grow.
func TestTradeDropsANodeForSeveralSmallerPods(t *testing.T) {
	for _, tc := range []struct {
		name string
		// smallMem is the other node's pods' memory: 400Mi leaves room
		// for the trade, 395Mi ten of them (46 MiB idle) would need
		// three to leave, more than the 1-cpu type holds beside the rest.
		smallMem string
		smalls   int
		// refuse gives the 1 GiB pods a required hostname anti-affinity
		// against the small pods.
		refuse bool
		after  float64
	}{
		{name: "one pod for two", smallMem: "400Mi", smalls: 9, after: 0.3},
		{name: "a placement refuses it", smallMem: "400Mi", smalls: 9, refuse: true, after: 0.4},
		{name: "the other node never grows", smallMem: "395Mi", smalls: 10, after: 0.4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := func(name string) *corev1.Pod {
				p := repackPod(name, "100m", "1Gi", map[string]string{"app": "big"})
				if tc.refuse {
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "small"}},
							TopologyKey:   corev1.LabelHostname,
						}},
					}}
				}
				return p
			}
			over := []*corev1.Pod{anchorPod("a1", "100Mi"), big("big-1"), big("big-2")}
			other := []*corev1.Pod{anchorPod("a2", "100Mi")}
			for i := range tc.smalls {
				other = append(other, repackPod(fmt.Sprintf("small-%d", i), "150m", tc.smallMem, map[string]string{"app": "small"}))
			}
			sv, d, s := twoNodesByHand(t, repackCatalog(), over, other)
			// By hand: 300m and 2,148 MiB on t-2, 1.45 or 1.6 cpu and
			// 3,700 or 4,050 MiB on t-2.
			if got := sv.cost(); math.Abs(got-0.4) > 1e-9 {
				t.Fatalf("hand-made plan costs %.2f, want 0.40 (%s | %s)", got, podNames(d), podNames(s))
			}
			sType := s.natural
			sv.trade()
			if got := sv.cost(); math.Abs(got-tc.after) > 1e-9 {
				t.Errorf("after trade the plan costs %.2f, want %.2f (%s | %s)", got, tc.after, podNames(d), podNames(s))
			}
			if s.natural != sType {
				t.Errorf("the other node moved from %s to %s", s.pool.types[sType].it.Name, s.pool.types[s.natural].it.Name)
			}
			pods := 0
			for _, n := range []*nodeState{d, s} {
				checkBooks(t, n)
				pods += len(n.pods)
				bigs, smalls := 0, 0
				for _, p := range n.pods {
					switch p.Labels["app"] {
					case "big":
						bigs++
					case "small":
						smalls++
					}
				}
				if tc.refuse && bigs > 0 && smalls > 0 {
					t.Errorf("node %s holds a big pod beside a small one it refuses", podNames(n))
				}
			}
			if pods != len(over)+len(other) {
				t.Errorf("the nodes hold %d pods, want %d", pods, len(over)+len(other))
			}
		})
	}
}
