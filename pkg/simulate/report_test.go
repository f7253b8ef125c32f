package simulate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/test"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func testPod(ns, name, cpu string) *corev1.Pod {
	return test.Pod(test.PodOptions{Namespace: ns, Name: name, CPU: cpu})
}

func in(key string, values ...string) scheduling.Requirement {
	return scheduling.Requirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// handMadePlan is a plan as the solver could return it, covering every
// part of the report.
func handMadePlan(t *testing.T) (*scheduling.Snapshot, *scheduling.Plan) {
	t.Helper()
	c, err := catalog.Default(catalog.Options{Families: []string{"m5", "c6g", "g4dn"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(names ...string) []*scheduling.InstanceType {
		var out []*scheduling.InstanceType
		for _, n := range names {
			it, ok := c.Get(n)
			if !ok {
				t.Fatalf("no %s", n)
			}
			out = append(out, it)
		}
		return out
	}
	web := []*corev1.Pod{testPod("shop", "web-0", "500m"), testPod("shop", "web-1", "500m"), testPod("shop", "web-2", "500m")}
	cache := []*corev1.Pod{testPod("shop", "cache-0", "1"), testPod("shop", "cache-1", "1")}
	trainer := testPod("ml", "trainer", "3")
	big := []*corev1.Pod{testPod("batch", "too-big-0", "512"), testPod("batch", "too-big-1", "512"), testPod("batch", "too-big-2", "512")}
	odd := testPod("ops", "pinned", "1")
	placed := testPod("shop", "web-3", "500m")

	snap := &scheduling.Snapshot{
		NodePools: []*scheduling.NodePool{{Name: "default"}, {Name: "gpu", Weight: 10}},
		InstanceTypes: map[string][]*scheduling.InstanceType{
			"default": get("m5.large", "m5.xlarge", "c6g.xlarge"),
			"gpu":     get("g4dn.xlarge"),
		},
		Pods: slices.Concat(web, cache, big, []*corev1.Pod{trainer, odd, placed}),
	}
	gpuTaint := scheduling.Taint{Taint: corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	why := map[string]scheduling.Reason{
		"default": scheduling.InsufficientResource{
			Shortfalls: []scheduling.Shortfall{{Resource: corev1.ResourceCPU, Requested: resource.MustParse("512"), LargestAllowed: resource.MustParse("3920m")}},
			Requests:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("512"), corev1.ResourcePods: resource.MustParse("1")},
		},
		"gpu": gpuTaint,
	}
	plan := &scheduling.Plan{
		NewNodeClaims: []*scheduling.NewNodeClaim{
			{
				NodePool:      "default",
				Requirements:  []scheduling.Requirement{in(corev1.LabelTopologyZone, "us-east-1a"), in(v1.LabelCapacityType, "spot"), in(corev1.LabelInstanceTypeStable, "c6g.xlarge", "m5.xlarge")},
				InstanceTypes: get("c6g.xlarge", "m5.xlarge"),
				Pods:          web,
				Price:         0.05,
			},
			{
				NodePool:      "default",
				Requirements:  []scheduling.Requirement{in(v1.LabelCapacityType, "on-demand"), in(corev1.LabelInstanceTypeStable, "m5.large")},
				InstanceTypes: get("m5.large"),
				Pods:          cache[:1],
			},
			{
				NodePool:      "default",
				Requirements:  []scheduling.Requirement{in(v1.LabelCapacityType, "on-demand"), in(corev1.LabelInstanceTypeStable, "m5.large")},
				InstanceTypes: get("m5.large"),
				Pods:          cache[1:],
			},
			{
				NodePool:      "gpu",
				Requirements:  []scheduling.Requirement{in(v1.LabelCapacityType, "on-demand"), {Key: v1.LabelAWSInstanceGPUCount, Operator: corev1.NodeSelectorOpGt, Values: []string{"0"}}},
				InstanceTypes: get("g4dn.xlarge"),
				Pods:          []*corev1.Pod{trainer},
			},
		},
		Existing: []scheduling.ExistingPlacement{{Node: "node-a", Pods: []*corev1.Pod{placed}}},
		Unschedulable: []scheduling.PodError{
			{Pod: big[0], NodePools: why},
			{Pod: big[1], NodePools: why},
			{Pod: odd, Existing: scheduling.ExistingNodes{Groups: []scheduling.NodeGroup{{Count: 1, Reason: scheduling.NodeLabels{}}}},
				NodePools: map[string]scheduling.Reason{
					"default": scheduling.IncompatibleRequirements{Key: corev1.LabelTopologyZone,
						Pod:      []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1d"}}},
						NodePool: []scheduling.NodeSelector{{Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a", "us-east-1b", "us-east-1c"}}}},
					"gpu": gpuTaint,
				}},
			{Pod: big[2], NodePools: why},
		},
	}
	return snap, plan
}

func testReport(t *testing.T) *Report {
	snap, plan := handMadePlan(t)
	bound, err := planBound(snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	return NewReport(snap, plan, 12*time.Millisecond, &bound, []string{"ignored 1 object: Service shop/web"})
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n%s", name, got)
	}
}

func TestWriteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts TextOptions
	}{
		{"report.txt", TextOptions{MaxPods: 2}},
		{"report-brief.txt", TextOptions{Brief: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := testReport(t).WriteText(&buf, tc.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, buf.Bytes())
		})
	}
}

func TestWriteJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport(t).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", buf.Bytes())
	AssertJSONSchema(t, buf.Bytes())
}

// AssertJSONSchema checks the fields -o json promises to tools.
func AssertJSONSchema(t *testing.T, data []byte) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	summary, ok := doc["summary"].(map[string]any)
	if !ok {
		t.Fatal("no summary object")
	}
	for _, k := range []string{"nodes", "costPerHour", "podsScheduled", "podsUnschedulable", "solveSeconds"} {
		if _, ok := summary[k].(float64); !ok {
			t.Errorf("summary.%s: missing or not a number", k)
		}
	}
	nodes, ok := doc["nodes"].([]any)
	if !ok {
		t.Fatal("nodes: missing or not a list")
	}
	for i, n := range nodes {
		node := n.(map[string]any)
		if _, ok := node["nodePool"].(string); !ok {
			t.Errorf("nodes[%d].nodePool: missing", i)
		}
		if its, ok := node["instanceTypes"].([]any); !ok || len(its) == 0 {
			t.Errorf("nodes[%d].instanceTypes: missing or empty", i)
		}
		reqs, ok := node["requirements"].(map[string]any)
		if !ok {
			t.Errorf("nodes[%d].requirements: missing", i)
		}
		for _, k := range []string{"topology.kubernetes.io/zone", "karpenter.sh/capacity-type"} {
			if v, ok := reqs[k].([]any); !ok || len(v) == 0 {
				t.Errorf("nodes[%d].requirements[%s]: missing or empty", i, k)
			}
		}
		if _, ok := node["price"].(float64); !ok {
			t.Errorf("nodes[%d].price: missing", i)
		}
		if _, ok := node["pods"].([]any); !ok {
			t.Errorf("nodes[%d].pods: missing", i)
		}
	}
	unsched, ok := doc["unschedulable"].([]any)
	if !ok {
		t.Fatal("unschedulable: missing or not a list")
	}
	for i, u := range unsched {
		entry := u.(map[string]any)
		if _, ok := entry["pod"].(string); !ok {
			t.Errorf("unschedulable[%d].pod: missing", i)
		}
		if _, ok := entry["reasons"].(map[string]any); !ok {
			t.Errorf("unschedulable[%d].reasons: missing", i)
		}
	}
	if int(summary["nodes"].(float64)) != len(nodes) || int(summary["podsUnschedulable"].(float64)) != len(unsched) {
		t.Errorf("summary counts disagree with the lists")
	}
}
