package schedulerconfig_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
)

func TestParseScoring(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     string
		want    map[string]schedv1.ScoringStrategyType
		weights map[string][2]int64 // fit, balanced
		wantErr string
	}{
		{name: "Karpenter's document: kube-scheduler's defaults", doc: "podTopologySpread:\n  defaultConstraints: []\n"},
		{name: "no profiles: LeastAllocated", doc: header,
			want: map[string]schedv1.ScoringStrategyType{"default-scheduler": schedv1.LeastAllocated}, weights: map[string][2]int64{"default-scheduler": {1, 1}}},
		{name: "MostAllocated in a named profile, Fit reweighted, Balanced off", doc: header + `profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu}, {name: memory, weight: 3}]
`, want: map[string]schedv1.ScoringStrategyType{"default-scheduler": schedv1.LeastAllocated, "packer": schedv1.MostAllocated},
			weights: map[string][2]int64{"default-scheduler": {1, 1}, "packer": {5, 0}}},
		{name: "score decides before multiPoint: Fit re-enabled in score without a weight, Balanced disabled by score's \"*\"", doc: header + `profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: NodeResourcesBalancedAllocation, weight: 4}]
      disabled: [{name: NodeResourcesFit}]
    score:
      enabled: [{name: NodeResourcesFit}]
      disabled: [{name: "*"}]
`, want: map[string]schedv1.ScoringStrategyType{"default-scheduler": schedv1.LeastAllocated},
			weights: map[string][2]int64{"default-scheduler": {1, 0}}},
		{name: "unknown strategy", doc: header + `profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: Fullest}}
`, wantErr: `profiles[0] (default-scheduler): pluginConfig[0] (NodeResourcesFit) args: scoringStrategy.type "Fullest" is not one of`},
		{name: "ratio without a shape", doc: header + `profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: RequestedToCapacityRatio}}
`, wantErr: "requestedToCapacityRatio.shape needs at least one point"},
		{name: "shape not increasing", doc: header + `profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 50, score: 10}]}}}
`, wantErr: "shape[1].utilization 50: utilizations must increase"},
		{name: "weight out of range", doc: header + `profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}}
`, wantErr: "resources[0] (cpu).weight 101 is not in (0, 100]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := schedulerconfig.ParseScoring([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d profiles, want %d: %+v", len(got), len(tc.want), got)
			}
			for name, typ := range tc.want {
				s := got[name]
				if s.Fit.Type != typ {
					t.Errorf("%s: strategy %q, want %q", name, s.Fit.Type, typ)
				}
				if w := [2]int64{s.FitWeight, s.BalancedWeight}; w != tc.weights[name] {
					t.Errorf("%s: weights (fit, balanced) %v, want %v", name, w, tc.weights[name])
				}
			}
		})
	}
}

// TestScore checks the score against kube-scheduler's arithmetic worked
// by hand (MaxNodeScore 100, integer division).
func TestScore(t *testing.T) {
	podOf := func(cpu, mem string) *corev1.Pod {
		rl := corev1.ResourceList{}
		if cpu != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: rl}}}}}
	}
	only := func(typ schedv1.ScoringStrategyType, shape ...schedv1.UtilizationShapePoint) schedulerconfig.Scoring {
		s := schedulerconfig.DefaultScoring()
		s.Fit.Type, s.BalancedWeight = typ, 0
		if len(shape) > 0 {
			s.Fit.RequestedToCapacityRatio = &schedv1.RequestedToCapacityRatioParam{Shape: shape}
		}
		return s
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("10000")}
	for _, tc := range []struct {
		name      string
		s         schedulerconfig.Scoring
		pod, used *corev1.Pod
		want      int64
	}{
		// cpu (3000 of 4000 free after) 25, memory (5000 of 10000) 50:
		// (25+50)/2 = 37.
		{"least allocated", only(schedv1.LeastAllocated), podOf("3", "5000"), nil, 37},
		// 75 and 50: 62 (integer division).
		{"most allocated", only(schedv1.MostAllocated), podOf("3", "5000"), nil, 62},
		// Over capacity counts as full: cpu 100, memory 50.
		{"most allocated, over capacity", only(schedv1.MostAllocated), podOf("3", "5000"), podOf("2", "1"), 75},
		// A pod without requests counts 100m and 200 MiB: memory over
		// capacity (209715200 > 10000) scores 100, cpu 100*100/4000 = 2.
		{"most allocated, non-zero defaults", only(schedv1.MostAllocated), podOf("", ""), nil, 51},
		// Utilization 75% and 50% on the shape 0→0, 100→10 (×10):
		// 75 and 50, rounded mean 62.5 → 63.
		{"requested to capacity ratio", only(schedv1.RequestedToCapacityRatio, schedv1.UtilizationShapePoint{Utilization: 0, Score: 0}, schedv1.UtilizationShapePoint{Utilization: 100, Score: 10}), podOf("3", "5000"), nil, 63},
		// Default: least 37, balanced: shares 0.75 and 0.5 (std 0.125 →
		// 87) against an empty node (100): 50 + (50+87-100)/2 = 68.
		{"default profile", schedulerconfig.DefaultScoring(), podOf("3", "5000"), nil, 37 + 68},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := schedulerconfig.Usage{}
			node.Add(tc.s.Usage(&corev1.Pod{}))
			if tc.used != nil {
				node.Add(tc.s.Usage(tc.used))
			}
			if got := tc.s.Score(tc.s.Usage(tc.pod), node, tc.s.Allocatable(alloc)); got != tc.want {
				t.Errorf("score %d, want %d", got, tc.want)
			}
		})
	}
}
