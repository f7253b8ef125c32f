package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/catalog"
	"github.com/joiner-dev/joiner/pkg/controllerview"
)

// TestSimulateDRA: a dump's DeviceClasses and ResourceClaimTemplates are
// planned with --ignore-dra-requests=false: three pods claiming 2 GPUs
// each share two 4-GPU nodes, a pod asking for an A10G by product name
// gets a g5; by default (Karpenter's) they wait with a DynamicResources
// reason.
func TestSimulateDRA(t *testing.T) {
	type result struct {
		Summary struct {
			PodsScheduled int `json:"podsScheduled"`
		} `json:"summary"`
		Nodes []struct {
			InstanceTypes []string `json:"instanceTypes"`
			Pods          []string `json:"pods"`
		} `json:"nodes"`
		Unschedulable []struct {
			Reasons map[string]struct {
				Kind string `json:"kind"`
			} `json:"reasons"`
		} `json:"unschedulable"`
	}
	run := func(args ...string) result {
		cmd := newRootCommand()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"simulate", "-f", "testdata/dra-gpus.yaml", "-o", "json", "--lower-bound=false"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("simulate: %v\n%s", err, out.String())
		}
		var r result
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return r
	}

	planned := run("--ignore-dra-requests=false")
	if planned.Summary.PodsScheduled != 4 || len(planned.Unschedulable) != 0 {
		t.Fatalf("%d pods scheduled, %d unschedulable; want all 4 planned: %+v", planned.Summary.PodsScheduled, len(planned.Unschedulable), planned)
	}
	gpus := map[string]int{"g4dn.12xlarge": 4, "g5.xlarge": 1, "g5.2xlarge": 1, "g5.4xlarge": 1, "g5.8xlarge": 1, "g5.16xlarge": 1, "g5.12xlarge": 4, "g5.24xlarge": 4, "g5.48xlarge": 8}
	trainers := 0
	for _, n := range planned.Nodes {
		cheapest := n.InstanceTypes[0]
		need := 0
		for _, p := range n.Pods {
			switch {
			case strings.Contains(p, "trainer"):
				need += 2
				trainers++
			case strings.Contains(p, "infer"):
				need++
				if !strings.HasPrefix(cheapest, "g5.") || slices.ContainsFunc(n.InstanceTypes, func(it string) bool { return !strings.HasPrefix(it, "g5.") }) {
					t.Errorf("the A10G pod's node may launch as %v, want g5 types only", n.InstanceTypes)
				}
			}
		}
		if gpus[cheapest] < need {
			t.Errorf("node %v carries pods %v needing %d GPUs; %s has %d", n.InstanceTypes, n.Pods, need, cheapest, gpus[cheapest])
		}
	}
	if trainers != 3 {
		t.Errorf("%d trainers placed, want 3", trainers)
	}

	ignored := run()
	if len(ignored.Unschedulable) != 4 {
		t.Fatalf("%d pods unschedulable by default, want 4 (IGNORE_DRA_REQUESTS=true)", len(ignored.Unschedulable))
	}
	for _, u := range ignored.Unschedulable {
		for pool, r := range u.Reasons {
			if r.Kind != "DynamicResources" {
				t.Errorf("nodepool %s: reason %s, want DynamicResources", pool, r.Kind)
			}
		}
	}
}

// TestExplainNamesTheDevice: explain tells a pod whose claim asks for 8
// GPUs on a family that has at most 4 which claim, request, DeviceClass
// and count it waits for, when the controller plans claims: as its view
// ConfigMap says, or as --ignore-dra-requests=false says; otherwise the
// pod is told IGNORE_DRA_REQUESTS keeps it waiting.
func TestExplainNamesTheDevice(t *testing.T) {
	dump, err := os.ReadFile("testdata/dra-gpus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	input := string(dump) + `
---
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: ml}
spec:
  resourceClaims:
  - {name: gpus, resourceClaimTemplateName: eight}
  nodeSelector: {karpenter.k8s.aws/instance-family: g4dn}
  containers:
  - {name: c, image: x, resources: {requests: {cpu: "1"}, claims: [{name: gpus}]}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: eight, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - {name: gpu, exactly: {deviceClassName: nvidia, count: 8}}
`
	c, err := catalog.Default(catalog.Options{Zones: []string{"us-east-1a"}, Families: []string{"g4dn", "g5"}})
	if err != nil {
		t.Fatal(err)
	}
	view := func(plan bool) string {
		data, err := controllerview.Encode(controllerview.View{ClusterName: "c", PlanDynamicResources: plan,
			NodePools: map[string]controllerview.NodePoolTypes{"gpu": {InstanceTypes: c.InstanceTypes()}}})
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: controllerview.Name("c"), Labels: map[string]string{controllerview.LabelView: "true"}},
			BinaryData: data}
		js, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		return "\n---\n" + string(js) + "\n"
	}
	const device = `claim "gpus" request "gpu" (8 of DeviceClass "nvidia", driver gpu.nvidia.com)`
	for _, tc := range []struct {
		name  string
		input string
		args  []string
		want  string
	}{
		{name: "the flag", input: input, args: []string{"--ignore-dra-requests=false"}, want: device},
		{name: "the controller's view", input: input + view(true), want: device},
		{name: "the flag over the view", input: input + view(true), args: []string{"--ignore-dra-requests=true"}, want: "IGNORE_DRA_REQUESTS=true"},
		{name: "neither", input: input + view(false), want: "IGNORE_DRA_REQUESTS=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCommand()
			var out strings.Builder
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetIn(strings.NewReader(tc.input))
			cmd.SetArgs(append([]string{"explain", "-f", "-", "pod", "ml/big"}, tc.args...))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("explain: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Fatalf("explain does not say %q:\n%s", tc.want, out.String())
			}
		})
	}
}
