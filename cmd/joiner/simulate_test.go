package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// fakeSolve stands in for the solver so these tests exercise input and
// output only: every pod asking for less than 64 cpu goes to one new node
// of the first NodePool, the others are unschedulable.
func fakeSolve(s *scheduling.Snapshot) (*scheduling.Plan, error) {
	plan := &scheduling.Plan{}
	if len(s.NodePools) == 0 {
		return plan, nil
	}
	pool := s.NodePools[0].Name
	its := s.InstanceTypes[pool]
	node := &scheduling.NewNodeClaim{NodePool: pool, InstanceTypes: its[len(its)-1:]}
	for _, p := range s.Pods {
		if p.Spec.Containers[0].Resources.Requests.Cpu().Value() >= 64 {
			plan.Unschedulable = append(plan.Unschedulable, scheduling.PodError{Pod: p, NodePools: map[string]scheduling.Reason{pool: scheduling.InsufficientResource{Requests: p.Spec.Containers[0].Resources.Requests}}})
			continue
		}
		node.Pods = append(node.Pods, p)
	}
	plan.NewNodeClaims = []*scheduling.NewNodeClaim{node}
	return plan, nil
}

func runCommand(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	old := solve
	solve = fakeSolve
	t.Cleanup(func() { solve = old })
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(append([]string{"simulate"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

func TestSimulateScenarioJSON(t *testing.T) {
	path := sharedScenarioPath(t, "diverse-100")
	out, err := runCommand(t, "", "--scenario", path, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary struct {
			Nodes             *int     `json:"nodes"`
			CostPerHour       *float64 `json:"costPerHour"`
			PodsScheduled     *int     `json:"podsScheduled"`
			PodsUnschedulable *int     `json:"podsUnschedulable"`
			SolveSeconds      *float64 `json:"solveSeconds"`
			LowerBound        *struct {
				LP float64 `json:"lpCostPerHour"`
			} `json:"lowerBound"`
		} `json:"summary"`
		Nodes []struct {
			NodePool      string              `json:"nodePool"`
			InstanceTypes []string            `json:"instanceTypes"`
			Requirements  map[string][]string `json:"requirements"`
			Price         *float64            `json:"price"`
			Pods          []string            `json:"pods"`
		} `json:"nodes"`
		Unschedulable []struct {
			Pod     string            `json:"pod"`
			Reasons map[string]string `json:"reasons"`
		} `json:"unschedulable"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	s := doc.Summary
	if s.Nodes == nil || s.CostPerHour == nil || s.PodsScheduled == nil || s.PodsUnschedulable == nil || s.SolveSeconds == nil {
		t.Fatalf("summary misses a field: %s", out[:200])
	}
	if *s.PodsScheduled+*s.PodsUnschedulable != 100 || *s.Nodes != len(doc.Nodes) {
		t.Errorf("summary = %+v", s)
	}
	if s.LowerBound == nil || s.LowerBound.LP <= 0 {
		t.Errorf("no lower bound in the summary")
	}
	for i, n := range doc.Nodes {
		if n.NodePool != "default" || len(n.InstanceTypes) == 0 || n.Price == nil || len(n.Pods) == 0 ||
			len(n.Requirements["topology.kubernetes.io/zone"]) == 0 || len(n.Requirements["karpenter.sh/capacity-type"]) == 0 {
			t.Errorf("nodes[%d] incomplete: %+v", i, n)
		}
		if !strings.HasPrefix(n.Pods[0], "default/diverse-100-") {
			t.Errorf("nodes[%d].pods[0] = %q, want namespace/name", i, n.Pods[0])
		}
	}
}

func TestSimulateYAMLExample(t *testing.T) {
	out, err := runCommand(t, "", "-f", "../../examples/simulate/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Plan: 1 new node",
		"10 pods scheduled, 1 unschedulable",
		"NodePool default: 1 new node",
		"sim-east-1a,sim-east-1b,sim-east-1c",
		"1 pod: batch/too-big\n    NodePool default: no instance type satisfied resources {\"cpu\":\"512\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateStdinAndInstanceTypes(t *testing.T) {
	dir := t.TempDir()
	catalogPath := filepath.Join(dir, "types.json")
	if err := os.WriteFile(catalogPath, []byte(`[{"name": "box", "capacity": {"cpu": "8", "memory": "32Gi", "pods": "50"},
	  "offerings": [{"zone": "z1", "capacityType": "on-demand", "price": 0.5, "available": true}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: []}}}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: '1'}}}]}\n"
	out, err := runCommand(t, yaml, "-f", "-", "--instance-types", catalogPath, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"box"`) || !strings.Contains(out, `"default/p"`) || !strings.Contains(out, `"costPerHour": 0.5`) {
		t.Errorf("unexpected output:\n%s", out)
	}
}

func TestSimulateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      tolerations: [{key: k, operator: Maybe}]\n      containers: [{name: c, image: i}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badTypes := filepath.Join(dir, "types.json")
	if err := os.WriteFile(badTypes, []byte(`{"instanceTypes": [{"name": "x", "capacity": {"cpu": "1"}, "offerings": [{"zone": "z", "capacityType": "spot", "price": -0.1, "available": true}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no input", nil, "give either --scenario FILE or -f FILE"},
		{"both inputs", []string{"--scenario", "a.json", "-f", "b.yaml"}, "give either --scenario FILE or -f FILE"},
		{"bad output", []string{"-f", bad, "-o", "yaml"}, `--output: want text, json or html, got "yaml"`},
		{"missing file", []string{"-f", filepath.Join(dir, "nope.yaml")}, "reading manifests: open"},
		{"field error", []string{"-f", bad}, `bad.yaml: document 1 (Deployment shop/web): spec.template.spec.tolerations[0].operator: unknown operator "Maybe"`},
		{"instance types error", []string{"-f", bad, "--instance-types", badTypes}, `types.json: instanceTypes[0] "x": offerings[0].price: must be >= 0, got -0.1`},
		{"unknown family", []string{"-f", "../../examples/simulate/cluster.yaml", "--instance-families", "q1"}, `unknown instance family "q1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCommand(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// sharedScenarioPath is a shared scenario file (see scenario.Dir); the test
// fails, saying where it looked, when it is missing.
func sharedScenarioPath(t *testing.T, name string) string {
	t.Helper()
	dir, err := scenario.Dir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimulateNotes(t *testing.T) {
	yaml := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: []}}}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: running, namespace: a}\nspec: {nodeName: gone, containers: [{name: c, image: i}]}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: a}\ndata: {k: v}\n"
	out, err := runCommand(t, yaml, "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ignored 1 object of kinds simulate does not read: ConfigMap a/cm",
		"left out 1 pod bound to nodes not in the input: a/running",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
