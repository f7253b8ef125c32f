package lowerbound_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

func sharedScenario(t testing.TB, name string) *scenario.Scenario {
	t.Helper()
	dir, err := scenario.Dir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.LoadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestComputeMatchesSharedREADME checks the bound against the figures the
// shared scenarios' README publishes.
func TestComputeMatchesSharedREADME(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lp, lpAnti   float64
		distinctPods int
	}{
		{name: "diverse-100", lp: 22.24, lpAnti: 22.87, distinctPods: 20},
		{name: "diverse-1000", lp: 208.84, lpAnti: 215.08, distinctPods: 200},
		{name: "diverse-5000", lp: 1041.76, lpAnti: 1072.98, distinctPods: 1000},
		{name: "diverse-10000", lp: 2086.97, lpAnti: 2149.40, distinctPods: 2000},
		{name: "generic-5000", lp: 1047.30, lpAnti: 1047.30, distinctPods: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "diverse-100" {
				t.Skip("large scenario")
			}
			s := sharedScenario(t, tc.name)
			b, err := lowerbound.Compute(s.Snapshot, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("LP %.4f  LP+anti %.4f  distinct %d  nodes %.3f", b.LP, b.LPAnti, b.DistinctNodes, b.Nodes)
			if math.Abs(b.LP-tc.lp) > 0.005 {
				t.Errorf("LP = %.4f, want %.2f", b.LP, tc.lp)
			}
			if math.Abs(b.LPAnti-tc.lpAnti) > 0.005 {
				t.Errorf("LP+anti = %.4f, want %.2f", b.LPAnti, tc.lpAnti)
			}
			if b.DistinctNodes != tc.distinctPods {
				t.Errorf("DistinctNodes = %d, want %d", b.DistinctNodes, tc.distinctPods)
			}
		})
	}
}
