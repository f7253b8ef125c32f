package scheduling_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestRandomInvariants solves random mixes of every feature (several
// NodePools with taints, weights and limits, existing nodes, spread,
// (anti-)affinity, selectors, tolerations) and checks each plan's
// invariants and determinism.
func TestRandomInvariants(t *testing.T) {
	iters := 150
	if testing.Short() {
		iters = 30
	}
	rng := rand.New(rand.NewSource(7))
	groups := []string{"a", "b", "c", "d"}
	for iter := 0; iter < iters; iter++ {
		pools := []*scheduling.NodePool{nodePool("general", poolWeight(int32(rng.Intn(3))))}
		if rng.Intn(2) == 0 {
			pools = append(pools, nodePool("tainted", poolWeight(5), poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule)))
		}
		if rng.Intn(2) == 0 {
			pools = append(pools, nodePool("limited", poolWeight(10), poolLimit(corev1.ResourceCPU, fmt.Sprint(4+rng.Intn(20))),
				poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b")))
		}
		var ps []*corev1.Pod
		for i := 0; i < 20+rng.Intn(120); i++ {
			g := groups[rng.Intn(len(groups))]
			opts := []podOpt{labeled("app", g)}
			sel := map[string]string{"app": groups[rng.Intn(len(groups))]}
			switch rng.Intn(9) {
			case 0:
				opts = append(opts, spread(corev1.LabelTopologyZone, int32(1+rng.Intn(2)), corev1.DoNotSchedule, sel))
			case 1:
				opts = append(opts, spread(corev1.LabelHostname, int32(1+rng.Intn(2)), corev1.DoNotSchedule, sel))
			case 2:
				opts = append(opts, requiredAntiAffinity(corev1.LabelHostname, map[string]string{"app": g}))
			case 3:
				opts = append(opts, requiredAffinity(corev1.LabelTopologyZone, map[string]string{"app": g}))
			case 4:
				opts = append(opts, nodeSelector(corev1.LabelTopologyZone, testZones[rng.Intn(len(testZones))]))
			case 5:
				opts = append(opts, tolerate("dedicated", "x", corev1.TaintEffectNoSchedule))
			case 6:
				opts = append(opts, preferredAntiAffinity(10, corev1.LabelHostname, sel), spread(corev1.LabelTopologyZone, 1, corev1.ScheduleAnyway, sel))
			}
			cpu := []string{"100m", "250m", "500m", "1", "2", "3"}[rng.Intn(6)]
			mem := []string{"128Mi", "512Mi", "1Gi", "4Gi"}[rng.Intn(4)]
			ps = append(ps, pod(fmt.Sprintf("p%03d", i), cpu, mem, opts...))
		}
		s := snapshot(pools, catalog(), ps)
		for i := 0; i < rng.Intn(4); i++ {
			name := fmt.Sprintf("n%d", i)
			var bound []*corev1.Pod
			for j := 0; j < rng.Intn(4); j++ {
				bound = append(bound, pod(fmt.Sprintf("%s-old%d", name, j), "500m", "512Mi", labeled("app", groups[rng.Intn(len(groups))])))
			}
			s.Nodes = append(s.Nodes, &scheduling.ExistingNode{Name: name, Initialized: true,
				Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: testZones[rng.Intn(len(testZones))]},
				Allocatable: list("cpu", "4", "memory", "8Gi", "pods", "40"), Pods: bound})
		}
		p, err := scheduling.Solve(s, scheduling.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range planViolations(s, p) {
			t.Errorf("case %d: %v", iter, err)
		}
		again, _ := scheduling.Solve(s, scheduling.Options{})
		if planText(p) != planText(again) {
			t.Errorf("case %d: not deterministic", iter)
		}
		if t.Failed() {
			for _, q := range ps {
				j, _ := json.Marshal([]any{q.Labels, q.Spec.NodeSelector, q.Spec.Affinity, q.Spec.TopologySpreadConstraints, q.Spec.Tolerations})
				t.Logf("%s %s", q.Name, j)
			}
			t.Logf("case %d plan:\n%s", iter, planText(p))
			return
		}
	}
}
