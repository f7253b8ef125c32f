package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestSimulateHTML draws the example's plan with the real solver and checks
// the page against the same plan in JSON: a planned node row per new
// node, the cost after the plan, every pod's verdict; then renders it in
// headless Chromium.
func TestSimulateHTML(t *testing.T) {
	run := func(output string) string {
		cmd := newRootCommand()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"simulate", "-f", "../../examples/simulate/cluster.yaml", "-o", output})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("-o %s: %v", output, err)
		}
		return out.String()
	}
	var plan struct {
		Summary struct {
			CostPerHour float64 `json:"costPerHour"`
		} `json:"summary"`
		Nodes []struct {
			Pods []string `json:"pods"`
		} `json:"nodes"`
		Existing []struct {
			Pods []string `json:"pods"`
		} `json:"existing"`
		Unschedulable []struct {
			Pod string `json:"pod"`
		} `json:"unschedulable"`
	}
	if err := json.Unmarshal([]byte(run("json")), &plan); err != nil {
		t.Fatal(err)
	}
	page := run("html")
	if got, want := strings.Count(page, `data-status="planned"`), len(plan.Nodes); got != want {
		t.Errorf("the page has %d planned nodes, the plan %d", got, want)
	}
	if want := fmt.Sprintf(`<div class="n">$%.4f</div><div class="l">per hour after the plan`, plan.Summary.CostPerHour); !strings.Contains(page, want) {
		t.Errorf("the page lacks the plan's cost %q", want)
	}
	for _, u := range plan.Unschedulable {
		if !strings.Contains(page, `data-pod="`+u.Pod+`" data-verdict="unschedulable"`) {
			t.Errorf("the page does not show %s unschedulable", u.Pod)
		}
	}
	for _, n := range plan.Nodes {
		for _, p := range n.Pods {
			if !strings.Contains(page, `data-pod="`+p+`" data-verdict="new node"`) {
				t.Errorf("the page does not show %s going to a new node", p)
			}
		}
	}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			if !strings.Contains(page, `data-pod="`+p+`" data-verdict="placed"`) {
				t.Errorf("the page does not show %s placed on an existing node", p)
			}
		}
	}

	path := filepath.Join(t.TempDir(), "plan.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, shot := test.Browse(t, "file://"+path)
	if got := strings.Count(dom, `class="bar memory"`); got != len(plan.Nodes) {
		t.Errorf("the rendered page has %d memory bars, want %d", got, len(plan.Nodes))
	}
	test.CheckScreenshot(t, shot, 16)
}

func TestSimulateHTMLNotForDisruption(t *testing.T) {
	_, err := runCommand(t, "", "--disruption", "-f", "../../examples/simulate/kubectl-dump.yaml", "-o", "html")
	if err == nil || !strings.Contains(err.Error(), "--output html draws a provisioning plan") {
		t.Errorf("got %v, want an error saying html is for provisioning plans", err)
	}
}
