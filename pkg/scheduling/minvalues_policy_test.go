package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestMinValuesPolicy checks MIN_VALUES_POLICY: Strict leaves a pod the
// fitting types cannot satisfy minValues for unplaced; BestEffort places it
// and lowers the NodeClaim's minValues to what its options offer, saying so.
func TestMinValuesPolicy(t *testing.T) {
	tests := []struct {
		name        string
		bestEffort  bool
		cpu         string
		wantPlaced  bool
		wantMin     int
		wantRelaxed bool
	}{
		{name: "strict, not satisfiable", cpu: "7", wantPlaced: false},
		{name: "best effort, not satisfiable: relaxed to the 2 types that fit", bestEffort: true, cpu: "7", wantPlaced: true, wantMin: 2, wantRelaxed: true},
		{name: "best effort, satisfiable: kept", bestEffort: true, cpu: "1", wantPlaced: true, wantMin: 3},
		{name: "strict, satisfiable: kept", cpu: "1", wantPlaced: true, wantMin: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := nodePool("default", poolMinValues(corev1.LabelInstanceTypeStable, 3))
			s := snapshot([]*scheduling.NodePool{np}, catalog(), one(pod("p", tt.cpu, "")))
			plan, err := scheduling.Solve(s, scheduling.Options{MinValuesBestEffort: tt.bestEffort})
			if err != nil {
				t.Fatal(err)
			}
			if placed := len(plan.NewNodeClaims) == 1; placed != tt.wantPlaced {
				t.Fatalf("placed = %v, want %v (unschedulable %v)", placed, tt.wantPlaced, plan.Unschedulable)
			}
			if !tt.wantPlaced {
				return
			}
			nc := plan.NewNodeClaims[0]
			if nc.MinValuesRelaxed != tt.wantRelaxed {
				t.Errorf("MinValuesRelaxed = %v, want %v", nc.MinValuesRelaxed, tt.wantRelaxed)
			}
			for _, r := range nc.Requirements {
				if r.Key != corev1.LabelInstanceTypeStable {
					continue
				}
				if r.MinValues == nil || *r.MinValues != tt.wantMin {
					t.Errorf("instance-type minValues = %v, want %d", r.MinValues, tt.wantMin)
				}
				if len(r.Values) < tt.wantMin {
					t.Errorf("%d instance types for minValues %d", len(r.Values), tt.wantMin)
				}
			}
		})
	}
}
