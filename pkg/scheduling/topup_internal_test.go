package scheduling

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
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
			sv, r, s := twoNodesByHand(t, repackCatalog(), reservoir, small)
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

// TestTopUpAcrossZones lays out a reservoir in zone-a (an anchor, four
// 0.5-cpu pods pinned to zone-a and two web pods, 3.1 cpu on the 4-cpu
// type) beside a node in zone-b with 0.5 cpu or more idle on its 2-cpu
// type. The
// web pods are counted by a zone spread (maxSkew 1) that a spreader pod in
// zone-b owns, so a web pod may leave zone-a only where the counts stay
// within the skew: from 2 against 1 to 1 against 2, but not from 2
// against 2 to 1 against 3. Within its zone topUp finds no room; across
// zones (anyZone) it moves a web pod when the spread allows, and the
// reservoir drops to the 3-cpu type.
func TestTopUpAcrossZones(t *testing.T) {
	for _, tc := range []struct {
		name    string
		anyZone bool
		webB    int // web pods on the zone-b node beside the spreader
		after   float64
	}{
		{name: "a web pod moves where the spread allows", anyZone: true, webB: 0, after: 0.5},
		{name: "not where the spread would break", anyZone: true, webB: 1, after: 0.6},
		{name: "not without anyZone", anyZone: false, webB: 0, after: 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inZone := func(p *corev1.Pod, zone string) *corev1.Pod {
				p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
				return p
			}
			web := map[string]string{"app": "web"}
			reservoir := []*corev1.Pod{inZone(anchorPod("anchor-a", "100Mi"), "zone-a")}
			for i := 0; i < 4; i++ {
				reservoir = append(reservoir, inZone(repackPod(fmt.Sprintf("pinned-%d", i), "500m", "512Mi", map[string]string{"app": "pinned"}), "zone-a"))
			}
			reservoir = append(reservoir, repackPod("web-a1", "500m", "512Mi", web), repackPod("web-a2", "500m", "512Mi", web))
			spreader := zoneSpreader(web)
			other := []*corev1.Pod{inZone(anchorPod("anchor-b", "100Mi"), "zone-b"), spreader, repackPod("guest", "500m", "512Mi", map[string]string{"app": "guest"})}
			for i := 0; i < tc.webB; i++ {
				other = append(other, repackPod(fmt.Sprintf("web-b%d", i), "400m", "512Mi", web))
			}
			sv, r, s := twoNodesByHand(t, twoZoneCatalog(), reservoir, other)
			// By hand: 3.1 cpu on 4 (0.4) and 1.1 or 1.5 cpu on 2 (0.2).
			if got := sv.cost(); math.Abs(got-0.6) > 1e-9 {
				t.Fatalf("hand-made plan costs %.2f, want 0.60 (%s | %s)", got, podNames(r), podNames(s))
			}
			sv.topUpAmong([]*nodeState{r}, tc.anyZone)
			if got := sv.cost(); math.Abs(got-tc.after) > 1e-9 {
				t.Errorf("after topUp the plan costs %.2f, want %.2f (%s | %s)", got, tc.after, podNames(r), podNames(s))
			}
			count := map[string]int{}
			for _, n := range []*nodeState{r, s} {
				checkBooks(t, n)
				for _, p := range n.pods {
					if p.Labels["app"] == "web" {
						count[sv.zones[bits.TrailingZeros64(n.zones)]]++
					}
					if p.Labels["app"] == "pinned" && n != r {
						t.Errorf("pod %s left its zone", p.Name)
					}
				}
			}
			if d := count["zone-a"] - count["zone-b"]; d > 1 || d < -1 {
				t.Errorf("web pods per zone %v: the spread's skew exceeds 1", count)
			}
		})
	}
}

// TestZoneSpreadChecks pins, each on its own, the two forms of topUp's
// spread rule: zoneSpreadsAllow, which picks the zones a pod may try, and
// zoneSpreadsHold, which accepts a move on the counts as they are after
// it (TestTopUpAcrossZones passes as long as either one refuses). Two web
// pods in zone-a, the spreader and webB more in zone-b, maxSkew 1; the
// anchors pin the two nodes' zones.
func TestZoneSpreadChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		webB  int
		allow bool // a web pod may leave zone-a for zone-b
	}{
		{name: "2 and 1: the move keeps the skew", webB: 0, allow: true},
		{name: "2 and 2: the move breaks it", webB: 1, allow: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := map[string]string{"app": "web"}
			anchorA, anchorB := anchorPod("anchor-a", "100Mi"), anchorPod("anchor-b", "100Mi")
			anchorA.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-a"}
			anchorB.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-b"}
			reservoir := []*corev1.Pod{anchorA, repackPod("web-a1", "500m", "512Mi", web), repackPod("web-a2", "500m", "512Mi", web)}
			spreader := zoneSpreader(web)
			other := []*corev1.Pod{anchorB, spreader}
			for i := 0; i < tc.webB; i++ {
				other = append(other, repackPod(fmt.Sprintf("web-b%d", i), "400m", "512Mi", web))
			}
			sv, r, _ := twoNodesByHand(t, twoZoneCatalog(), reservoir, other)
			var c *podClass
			for i, p := range r.pods {
				if p.Name == "web-a2" {
					c = r.podClasses[i]
				}
			}
			if c == nil {
				t.Fatalf("web-a2 is not on the reservoir (%s)", podNames(r))
			}
			from, to := slices.Index(sv.zones, "zone-a"), slices.Index(sv.zones, "zone-b")
			if from < 0 || to < 0 {
				t.Fatalf("zones %v", sv.zones)
			}
			if !sv.zoneSpreadsHold(c) {
				t.Fatalf("the hand-made plan breaks the spread")
			}
			if got := sv.zoneSpreadsAllow(c, from, to); got != tc.allow {
				t.Errorf("zoneSpreadsAllow = %v, want %v", got, tc.allow)
			}
			// The counts as a move to zone-b leaves them.
			var zoneGroups []*topoGroup
			for _, g := range c.base.selectedBy {
				if g.key == corev1.LabelTopologyZone {
					zoneGroups = append(zoneGroups, g)
				}
			}
			if len(zoneGroups) == 0 {
				t.Fatal("no zone spread counts the web pods")
			}
			for _, g := range zoneGroups {
				g.counts[sv.zones[from]]--
				g.counts[sv.zones[to]]++
			}
			if got := sv.zoneSpreadsHold(c); got != tc.allow {
				t.Errorf("zoneSpreadsHold after the move = %v, want %v", got, tc.allow)
			}
		})
	}
}

// zoneSpreader is a 0.5-cpu pod labelled labels that spreads the pods
// labelled so over zones with maxSkew 1.
func zoneSpreader(labels map[string]string) *corev1.Pod {
	p := repackPod("spreader", "500m", "512Mi", labels)
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: labels},
	}}
	return p
}
