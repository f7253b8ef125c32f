package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixDisruptionClock(t *testing.T) {
	old := disruptionNow
	disruptionNow = func() time.Time { return time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) }
	t.Cleanup(func() { disruptionNow = old })
}

func TestSimulateDisruptionDump(t *testing.T) {
	fixDisruptionClock(t)
	out, err := runCommand(t, "", "--disruption", "-f", "testdata/disruption-dump.yaml", "--zones", "us-east-1a")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Disruption: 4 managed nodes",
		// The empty node goes in one command with the consolidation the
		// next pass would find (docs/migrating.md: composed commands).
		"1. multi-node-consolidation (Underutilized): remove 2 nodes",
		"- empty-1  general/m6i.xlarge",
		"pod prod/api-0: busy → asleep",
		`disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`,
		"pdb prevents pod evictions (PodDisruptionBudget=[prod/db])",
		"3 nodes have no NodeClaim in the input",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateDisruptionDumpJSON(t *testing.T) {
	fixDisruptionClock(t)
	out, err := runCommand(t, "", "--disruption", "-f", "testdata/disruption-dump.yaml", "--zones", "us-east-1a", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Commands []struct {
			Method     string `json:"method"`
			Candidates []struct {
				Node string `json:"node"`
			} `json:"candidates"`
		} `json:"commands"`
		Verdicts []struct {
			Node      string `json:"node"`
			Candidate bool   `json:"candidate"`
			Blocked   string `json:"blocked"`
			Kind      string `json:"kind"`
			Command   string `json:"command"`
		} `json:"verdicts"`
		Allowed map[string]map[string]int `json:"allowedDisruptions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(doc.Commands) != 1 || doc.Commands[0].Method != "multi-node-consolidation" || len(doc.Commands[0].Candidates) != 2 ||
		doc.Commands[0].Candidates[0].Node != "empty-1" || doc.Commands[0].Candidates[1].Node != "busy" {
		t.Errorf("commands %+v", doc.Commands)
	}
	want := map[string]struct {
		candidate bool
		blocked   string
		kind      string
		command   string
	}{
		"empty-1": {true, "", "", "multi-node-consolidation"},
		"pinned":  {false, "pdb prevents pod evictions", "PDB", ""},
		"asleep":  {false, "do-not-disrupt", "NodeDoNotDisrupt", ""},
		"busy":    {true, "", "", "multi-node-consolidation"},
	}
	for _, v := range doc.Verdicts {
		w := want[v.Node]
		if v.Candidate != w.candidate || !strings.Contains(v.Blocked, w.blocked) || (w.blocked == "") != (v.Blocked == "") || v.Kind != w.kind || v.Command != w.command {
			t.Errorf("verdict %+v, want %+v", v, w)
		}
	}
	if doc.Allowed["general"]["Underutilized"] != 4 {
		t.Errorf("allowed disruptions %v", doc.Allowed)
	}
}

// TestSimulateDisruptionRounds replays consolidation on a shared cluster
// until no command is left.
func TestSimulateDisruptionRounds(t *testing.T) {
	fixDisruptionClock(t)
	scenarioPath := sharedScenarioPath(t, "diverse-1000")
	cluster := filepath.Join(filepath.Dir(scenarioPath), "consolidation", "diverse-1000.half.cluster.json")
	out, err := runCommand(t, "", "--disruption", "--scenario", scenarioPath, "--cluster", cluster, "--rounds", "0", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Nodes          int     `json:"nodes"`
			CostPerHour    float64 `json:"costPerHour"`
			Commands       int     `json:"commands"`
			SavingsPerHour float64 `json:"savingsPerHour"`
		} `json:"summary"`
		Commands []struct {
			Round          int     `json:"round"`
			SavingsPerHour float64 `json:"savingsPerHour"`
			Moves          []struct {
				Pod, From, To string
			} `json:"moves"`
		} `json:"commands"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	s := doc.Summary
	if s.Nodes != 200 || s.Commands != len(doc.Commands) || s.Commands < 5 || s.SavingsPerHour < 0.6*s.CostPerHour {
		t.Errorf("summary %+v", s)
	}
	total := 0.0
	for i, c := range doc.Commands {
		total += c.SavingsPerHour
		if c.Round != i+1 || c.SavingsPerHour <= 0 {
			t.Errorf("command %d: round %d saves %v", i, c.Round, c.SavingsPerHour)
		}
	}
	if d := total - s.SavingsPerHour; d > 1e-6 || d < -1e-6 {
		t.Errorf("commands save %v, summary says %v", total, s.SavingsPerHour)
	}
}

func TestSimulateDisruptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "cluster without disruption", args: []string{"--scenario", "x.json", "--cluster", "y.json"}, want: "--cluster: only with --disruption"},
		{name: "scenario without cluster", args: []string{"--disruption", "--scenario", "x.json"}, want: "needs --cluster FILE"},
		{name: "cluster with a dump", args: []string{"--disruption", "-f", "testdata/disruption-dump.yaml", "--cluster", "y.json"}, want: "--cluster: only with --scenario"},
		{name: "min savings out of range", args: []string{"--disruption", "-f", "testdata/disruption-dump.yaml", "--min-savings", "1.5"}, want: "--min-savings"},
		{name: "negative rounds", args: []string{"--disruption", "-f", "testdata/disruption-dump.yaml", "--rounds", "-1"}, want: "--rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCommand(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
