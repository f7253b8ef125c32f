package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimulateExampleWithSolver runs the real solver on the example and
// checks what the example promises, not the exact plan (the solver may
// find cheaper ones over time).
func TestSimulateExampleWithSolver(t *testing.T) {
	cmd := newRootCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"simulate", "-f", "../../examples/simulate/cluster.yaml", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			CostPerHour       float64 `json:"costPerHour"`
			PodsScheduled     int     `json:"podsScheduled"`
			PodsUnschedulable int     `json:"podsUnschedulable"`
			LowerBound        struct {
				LPAnti float64 `json:"lpAntiCostPerHour"`
			} `json:"lowerBound"`
		} `json:"summary"`
		Nodes []struct {
			NodePool string   `json:"nodePool"`
			Pods     []string `json:"pods"`
		} `json:"nodes"`
		Unschedulable []struct {
			Pod     string `json:"pod"`
			Reasons map[string]struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"reasons"`
		} `json:"unschedulable"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary.PodsScheduled != 10 || doc.Summary.PodsUnschedulable != 1 {
		t.Errorf("scheduled %d, unschedulable %d; want 10 and 1", doc.Summary.PodsScheduled, doc.Summary.PodsUnschedulable)
	}
	if doc.Summary.CostPerHour < doc.Summary.LowerBound.LPAnti-1e-9 {
		t.Errorf("cost %v beats the lower bound %v", doc.Summary.CostPerHour, doc.Summary.LowerBound.LPAnti)
	}
	cacheNodes := map[int]bool{}
	for i, n := range doc.Nodes {
		for _, p := range n.Pods {
			if p == "ml/trainer" && n.NodePool != "gpu" {
				t.Errorf("the GPU pod landed on NodePool %s", n.NodePool)
			}
			if p != "ml/trainer" && n.NodePool == "gpu" {
				t.Errorf("%s landed on the tainted gpu NodePool", p)
			}
			if strings.HasPrefix(p, "shop/cache-") {
				if cacheNodes[i] {
					t.Errorf("two cache pods share node %d", i)
				}
				cacheNodes[i] = true
			}
		}
	}
	if len(cacheNodes) != 3 {
		t.Errorf("cache pods on %d nodes, want 3", len(cacheNodes))
	}
	if len(doc.Unschedulable) == 1 {
		u := doc.Unschedulable[0]
		if u.Pod != "batch/too-big" || !strings.Contains(u.Reasons["default"].Message, "no instance type") || !strings.Contains(u.Reasons["gpu"].Message, "taint") ||
			u.Reasons["default"].Kind != "InsufficientResource" || u.Reasons["gpu"].Kind != "Taint" {
			t.Errorf("unschedulable = %+v", u)
		}
	}
}

// TestSimulateScenarioWithSolver runs the real solver on the smallest
// shared scenario: every pod placed, never below the LP bound.
func TestSimulateScenarioWithSolver(t *testing.T) {
	path := sharedScenarioPath(t, "diverse-100")
	cmd := newRootCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"simulate", "--scenario", path, "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Nodes             int     `json:"nodes"`
			CostPerHour       float64 `json:"costPerHour"`
			PodsScheduled     int     `json:"podsScheduled"`
			PodsUnschedulable int     `json:"podsUnschedulable"`
			LowerBound        struct {
				LPAnti float64 `json:"lpAntiCostPerHour"`
			} `json:"lowerBound"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Summary
	if s.PodsScheduled != 100 || s.PodsUnschedulable != 0 || s.Nodes == 0 {
		t.Errorf("summary = %+v", s)
	}
	if s.CostPerHour < s.LowerBound.LPAnti-1e-9 || s.LowerBound.LPAnti < 22.86 {
		t.Errorf("cost %.4f, LP+anti %.4f", s.CostPerHour, s.LowerBound.LPAnti)
	}
}
