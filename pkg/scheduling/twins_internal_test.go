package scheduling

import (
	"fmt"
	"math"
	"math/bits"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExchangeTwinsAcrossZones lays out, by hand, a reservoir in zone-a
// sized by memory (a 3-GiB web pod among five 1-GiB pods: 1.1 cpu and
// 8.1 GiB on the 5-cpu type) beside a node in zone-b whose web pod is
// cpu-heavy (2 cpu, 1 GiB), with the web pods spread over the zones. No
// move keeps the zones' counts, but exchanging the two web pods does when
// they are twins (same labels): the reservoir drops to the 4-cpu type and
// the other node to the 2-cpu type. Pods that differ in a label, or a
// node that would have to grow, keep the plan as it was.
func TestExchangeTwinsAcrossZones(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lightLabels are the labels of zone-b's web pod.
		lightLabels map[string]string
		// anchorBMem is what zone-b's anchor asks: 3.5 GiB leaves no
		// room for the 3-GiB web pod in zone-b's 3-cpu type (6 GiB).
		anchorBMem string
		before     float64
		after      float64
	}{
		{name: "twins are exchanged", lightLabels: map[string]string{"app": "web"}, anchorBMem: "100Mi", before: 0.8, after: 0.6},
		{name: "pods that differ in a label are not", lightLabels: map[string]string{"app": "web", "tier": "x"}, anchorBMem: "100Mi", before: 0.8, after: 0.8},
		{name: "the other node never grows", lightLabels: map[string]string{"app": "web"}, anchorBMem: "3500Mi", before: 0.8, after: 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			anchor := func(name, zone, mem string) *corev1.Pod {
				p := anchorPod(name, mem)
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
				return p
			}
			spread := func(p *corev1.Pod) *corev1.Pod {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew:           1,
					TopologyKey:       corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				}}
				return p
			}
			heavy := spread(repackPod("web-heavy", "500m", "3Gi", map[string]string{"app": "web"}))
			light := spread(repackPod("web-light", "2", "1Gi", tc.lightLabels))
			reservoir := []*corev1.Pod{anchor("anchor-a", "zone-a", "100Mi"), heavy}
			for i := 0; i < 5; i++ {
				reservoir = append(reservoir, repackPod(fmt.Sprintf("filler-%d", i), "100m", "1Gi", map[string]string{"app": "filler"}))
			}
			other := []*corev1.Pod{anchor("anchor-b", "zone-b", tc.anchorBMem), light}
			sv, r, s := twoNodesByHand(t, twoZoneCatalog(), reservoir, other)
			if got := sv.cost(); math.Abs(got-tc.before) > 1e-9 {
				t.Fatalf("hand-made plan costs %.2f, want %.2f (%s | %s)", got, tc.before, podNames(r), podNames(s))
			}
			sv.exchangeTwins()
			if got := sv.cost(); math.Abs(got-tc.after) > 1e-9 {
				t.Errorf("after the exchanges the plan costs %.2f, want %.2f (%s | %s)", got, tc.after, podNames(r), podNames(s))
			}
			for _, n := range []*nodeState{r, s} {
				web := 0
				for _, p := range n.pods {
					if p.Labels["app"] == "web" {
						web++
					}
				}
				if web != 1 {
					t.Errorf("node %s holds %d web pods, want 1 (the zones' counts kept)", podNames(n), web)
				}
				checkBooks(t, n)
			}
			if z := sv.zones[bits.TrailingZeros64(r.zones)]; z != "zone-a" {
				t.Errorf("the reservoir moved to %s", z)
			}
		})
	}
}

// twoZoneCatalog is repackCatalog's types offered in zone-a and zone-b.
func twoZoneCatalog() []*InstanceType {
	its := repackCatalog()
	for _, it := range its {
		it.Requirements[corev1.LabelTopologyZone] = []string{"zone-a", "zone-b"}
		o := it.Offerings[0]
		o.Zone = "zone-b"
		it.Offerings = append(it.Offerings, o)
	}
	return its
}
