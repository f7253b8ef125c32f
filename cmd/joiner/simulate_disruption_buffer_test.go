package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// disruptionPool is a NodePool of m6i.xlarge nodes (3.9 cpu allocatable)
// that consolidates at once.
const disruptionPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s, budgets: [{nodes: "100%"}]}
  template:
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// disruptionNode is an initialised m6i.xlarge node of the pool in zone.
func disruptionNode(name, zone string) string {
	return `---
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {karpenter.sh/nodepool: general, karpenter.sh/initialized: "true", karpenter.sh/capacity-type: on-demand, node.kubernetes.io/instance-type: m6i.xlarge, kubernetes.io/arch: amd64, kubernetes.io/os: linux, kubernetes.io/hostname: ` + name + `, topology.kubernetes.io/zone: ` + zone + `}
status:
  allocatable: {cpu: 3900m, memory: 14Gi, pods: "58"}
  conditions: [{type: Ready, status: "True"}]
`
}

// disruptionPod is a pod of app bound to node, of scheduler.
func disruptionPod(name, app, node, scheduler, cpu string) string {
	return `---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: prod, labels: {app: ` + app + `}}
spec:
  schedulerName: ` + scheduler + `
  nodeName: ` + node + `
  containers: [{name: c, image: i, resources: {requests: {cpu: "` + cpu + `", memory: 1Gi}}}]
status: {phase: Running}
`
}

// bufferDump is a CapacityBuffer of one 3-cpu chunk: it fits an empty
// m6i.xlarge, not one running a 1-cpu pod.
const bufferDump = `---
apiVersion: v1
kind: PodTemplate
metadata: {name: chunk, namespace: prod}
template:
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "3", memory: 1Gi}}}]
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: room, namespace: prod}
spec: {podTemplateRef: {name: chunk}, replicas: 1}
`

// TestSimulateDisruptionKeepsBufferRoom: the dry run plans a dump's
// CapacityBuffers as the controller does. Without the buffer the empty node
// goes (emptiness); with it, the empty node holds the buffer's chunk and
// nothing is consolidated: neither the empty node, nor the busy one whose
// pod would take the room.
func TestSimulateDisruptionKeepsBufferRoom(t *testing.T) {
	fixDisruptionClock(t)
	cluster := disruptionPool + disruptionNode("idle", "us-east-1a") + disruptionNode("busy", "us-east-1a") + disruptionPod("api-0", "api", "busy", "default-scheduler", "1")
	for _, tc := range []struct {
		name     string
		input    string
		commands int
		note     string
	}{
		{name: "no buffer", input: cluster, commands: 1},
		{name: "buffer", input: cluster + bufferDump, commands: 0, note: "planned the room of 1 CapacityBuffer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dump.yaml")
			if err := os.WriteFile(path, []byte(tc.input), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := runCommand(t, "", "--disruption", "-f", path, "--zones", "us-east-1a", "-o", "json")
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
				Notes []string `json:"notes"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if len(doc.Commands) != tc.commands {
				t.Fatalf("%d command(s) %+v, want %d:\n%s", len(doc.Commands), doc.Commands, tc.commands, out)
			}
			if tc.commands == 1 && (doc.Commands[0].Method != "emptiness" || doc.Commands[0].Candidates[0].Node != "idle") {
				t.Errorf("command %+v, want emptiness of idle", doc.Commands[0])
			}
			if tc.note != "" && !strings.Contains(strings.Join(doc.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", doc.Notes, tc.note)
			}
		})
	}
}

// movedTo matches a moved pod of app web and its destination in the text
// report.
var movedTo = regexp.MustCompile(`pod prod/(web-[ab]): \S+ → (\S+)`)

// TestSimulateDisruptionReadsSchedulerConfig: the dry run applies
// SCHEDULER_CONFIG's default zone spread to pods without constraints, as
// the controller does. Two web pods, one per zone, each on its own node:
// without the config consolidation replaces both nodes with one new node
// carrying both pods; with it, no new node in one zone carries both (the
// pool launches in two zones, a skew of 2), and the cheapest command left
// moves one pod to the other's node.
func TestSimulateDisruptionReadsSchedulerConfig(t *testing.T) {
	fixDisruptionClock(t)
	dump := disruptionPool + `---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec: {selector: {app: web}}
` + disruptionNode("node-a", "us-east-1a") + disruptionNode("node-b", "us-east-1b") +
		disruptionPod("web-a", "web", "node-a", "zone-spread", "1") + disruptionPod("web-b", "web", "node-b", "zone-spread", "1")
	dir := t.TempDir()
	path, config := filepath.Join(dir, "dump.yaml"), filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(zoneSpreadConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, config string
		// onNew: both pods end on one new node.
		onNew bool
	}{
		{name: "no config", onNew: true},
		{name: "zone spread", config: config},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCommand(t, "", "--disruption", "-f", path, "--zones", "us-east-1a,us-east-1b", "--scheduler-config", tc.config)
			if err != nil {
				t.Fatal(err)
			}
			where := map[string]string{"web-a": "node-a", "web-b": "node-b"}
			for _, m := range movedTo.FindAllStringSubmatch(out, -1) {
				where[m[1]] = m[2]
			}
			if onNew := where["web-a"] == where["web-b"] && strings.HasPrefix(where["web-a"], "replacement-"); onNew != tc.onNew {
				t.Errorf("web pods end on %v (both on one new node %t), want %t:\n%s", where, onNew, tc.onNew, out)
			}
			if !strings.Contains(out, "1 command would remove") {
				t.Errorf("no consolidation command:\n%s", out)
			}
		})
	}
	if _, err := runCommand(t, "", "--disruption", "-f", path, "--scheduler-config", strings.Replace(zoneSpreadConfig, "defaultingType: List", "defaultingType: Sometimes", 1)); err == nil || !strings.Contains(err.Error(), "--scheduler-config") {
		t.Errorf("a config kube-scheduler refuses: error %v, want one naming --scheduler-config", err)
	}
}
