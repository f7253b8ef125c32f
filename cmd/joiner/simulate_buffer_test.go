package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const bufferPool = onDemandPool + `apiVersion: v1
kind: PodTemplate
metadata: {name: chunk, namespace: default}
template:
  metadata: {labels: {app: chunk}}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: "2", memory: 4Gi}}
`

const bufferNode = `
---
apiVersion: v1
kind: Node
metadata:
  name: big
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m6i.4xlarge
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: big
    topology.kubernetes.io/zone: us-east-1a
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "58"}
  allocatable: {cpu: "15", memory: 60Gi, pods: "58"}
`

func buffer(spec string) string {
	return `
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: room, namespace: default}
spec:
` + spec
}

const bufferDeployment = `
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

// TestSimulatePlansCapacityBuffers: a CapacityBuffer in a -f dump is
// resolved as the controller resolves it (its PodTemplate or workload, its
// replicas, percentage and the namespace's ResourceQuotas) and its chunks
// are planned as virtual pods: room on new nodes, or on an existing node
// with room, with the Provisioning condition the controller would write.
func TestSimulatePlansCapacityBuffers(t *testing.T) {
	type report struct {
		Summary struct {
			Nodes         int `json:"nodes"`
			PodsScheduled int `json:"podsScheduled"`
		} `json:"summary"`
		Nodes []struct {
			Pods []string `json:"pods"`
		} `json:"nodes"`
		Unschedulable []struct {
			Pod string `json:"pod"`
		} `json:"unschedulable"`
		Buffers []struct {
			Buffer             string   `json:"buffer"`
			Chunks             int32    `json:"chunks"`
			LimitedByQuotas    string   `json:"limitedByQuotas"`
			NotReady           string   `json:"notReady"`
			Provisioning       string   `json:"provisioning"`
			ProvisioningReason string   `json:"provisioningReason"`
			OnExistingNodes    int      `json:"onExistingNodes"`
			OnNewNodes         int      `json:"onNewNodes"`
			Unschedulable      int      `json:"unschedulable"`
			Nodes              []string `json:"nodes"`
		} `json:"buffers"`
	}
	for _, tc := range []struct {
		name                  string
		input                 string
		chunks                int32
		existing, new, failed int
		reason, notReady      string
		quota                 bool
		pods                  int
		// onNode is the existing node holding the room; "" when it is
		// on new nodes.
		onNode string
	}{
		{name: "replicas of a pod template on new nodes", input: bufferPool + buffer("  podTemplateRef: {name: chunk}\n  replicas: 2\n"),
			chunks: 2, new: 2, reason: "RequiresNewCapacity"},
		{name: "room on an existing node", input: bufferPool + bufferNode + buffer("  podTemplateRef: {name: chunk}\n  replicas: 2\n"),
			chunks: 2, existing: 2, reason: "FitsExistingCapacity", onNode: "big"},
		{name: "percentage of a deployment", input: bufferPool + bufferDeployment + buffer("  scalableRef: {apiGroup: apps, kind: Deployment, name: web}\n  percentage: 50\n"),
			chunks: 2, new: 2, reason: "RequiresNewCapacity", pods: 4},
		{name: "limited by a resource quota", input: bufferPool + buffer("  podTemplateRef: {name: chunk}\n  replicas: 3\n") +
			"\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: default}\nstatus:\n  hard: {requests.cpu: \"5\"}\n  used: {requests.cpu: \"1\"}\n",
			chunks: 2, new: 2, reason: "RequiresNewCapacity", quota: true},
		{name: "fits no NodePool", input: bufferPool + buffer("  podTemplateRef: {name: chunk}\n  replicas: 1\n") +
			strings.Replace(buffer("  podTemplateRef: {name: huge}\n  replicas: 1\n"), "name: room", "name: huge", 1) +
			"\n---\napiVersion: v1\nkind: PodTemplate\nmetadata: {name: huge, namespace: default}\ntemplate:\n  spec:\n    containers:\n    - name: c\n      resources: {requests: {cpu: \"5000\"}}\n",
			chunks: 1, new: 1, reason: "RequiresNewCapacity"},
		{name: "template not found", input: bufferPool + buffer("  podTemplateRef: {name: missing}\n  replicas: 2\n"),
			notReady: "PodTemplateNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r report
			if err := simulateJSON(t, tc.input, &r, "--zones", "us-east-1a"); err != nil {
				t.Fatal(err)
			}
			if len(r.Buffers) == 0 {
				t.Fatalf("no buffers in the report: %+v", r)
			}
			b := r.Buffers[0]
			if b.Buffer != "default/room" {
				t.Fatalf("first buffer %q, want default/room", b.Buffer)
			}
			if tc.notReady != "" {
				if !strings.HasPrefix(b.NotReady, tc.notReady) || r.Summary.Nodes != 0 {
					t.Fatalf("buffer %+v, %d new nodes; want not ready %s and no node", b, r.Summary.Nodes, tc.notReady)
				}
				return
			}
			if b.Chunks != tc.chunks || b.OnExistingNodes != tc.existing || b.OnNewNodes != tc.new || b.Unschedulable != tc.failed {
				t.Errorf("buffer %+v, want %d chunks: %d existing, %d new, %d unschedulable", b, tc.chunks, tc.existing, tc.new, tc.failed)
			}
			if b.ProvisioningReason != tc.reason || (b.Provisioning == "True") != (tc.reason == "FitsExistingCapacity") {
				t.Errorf("Provisioning=%s %s, want reason %s", b.Provisioning, b.ProvisioningReason, tc.reason)
			}
			if (b.LimitedByQuotas != "") != tc.quota {
				t.Errorf("limitedByQuotas %q, want limited: %v", b.LimitedByQuotas, tc.quota)
			}
			if tc.onNode != "" {
				if strings.Join(b.Nodes, ",") != tc.onNode || r.Summary.Nodes != 0 {
					t.Errorf("room on %v with %d new nodes, want on %s and no new node", b.Nodes, r.Summary.Nodes, tc.onNode)
				}
			} else {
				room := 0
				for _, n := range b.Nodes {
					var i int
					if _, err := fmt.Sscanf(n, "new #%d", &i); err != nil || i < 1 || i > len(r.Nodes) {
						t.Fatalf("room on %q, want a new node of the plan's %d", n, len(r.Nodes))
					}
					for _, p := range r.Nodes[i-1].Pods {
						if strings.HasPrefix(p, "default/room-buffer-") {
							room++
						}
					}
				}
				if room != tc.new {
					t.Errorf("the new nodes %v hold %d chunks of the buffer, want %d", b.Nodes, room, tc.new)
				}
			}
			if r.Summary.PodsScheduled != tc.pods {
				t.Errorf("%d pods scheduled, want %d (chunks are not pods)", r.Summary.PodsScheduled, tc.pods)
			}
			if len(r.Unschedulable) != 0 {
				t.Errorf("unschedulable %+v, want none: a buffer's chunks are reported with the buffer", r.Unschedulable)
			}
			if len(r.Buffers) > 1 {
				if h := r.Buffers[1]; h.Unschedulable != 1 || h.ProvisioningReason != "Unschedulable" {
					t.Errorf("huge buffer %+v, want 1 unschedulable chunk, Provisioning reason Unschedulable", h)
				}
			}
		})
	}
}

// simulateJSON runs simulate -f - -o json with the real solver on input and
// decodes the report into v.
func simulateJSON(t *testing.T, input string, v any, args ...string) error {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(input))
	cmd.SetArgs(append([]string{"simulate", "-f", "-", "-o", "json"}, args...))
	if err := cmd.Execute(); err != nil {
		return fmt.Errorf("simulate: %w\n%s", err, errOut.String())
	}
	if err := json.Unmarshal([]byte(out.String()), v); err != nil {
		return fmt.Errorf("decoding %s: %w", out.String(), err)
	}
	return nil
}
