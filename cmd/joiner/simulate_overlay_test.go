package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// onDemandPool is a NodePool of on-demand capacity, the simulate tests'
// usual pool, followed by a document separator.
const onDemandPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
`

const overlayPoolAndPod = onDemandPool + `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "1", memory: 1Gi}}
`

// familyOverlay doubles the price of one instance family.
func familyOverlay(name, weight, family, change string) string {
	return `
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: ` + name + `}
spec:
  weight: ` + weight + `
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [` + family + `]}
  priceAdjustment: "` + change + `"
`
}

// TestSimulateAppliesNodeOverlays: a NodeOverlay in a -f dump changes the
// plan (the family it makes dearer is no longer the first choice), and two
// conflicting overlays change nothing, with a note saying why.
func TestSimulateAppliesNodeOverlays(t *testing.T) {
	type plan struct {
		Nodes []struct {
			InstanceTypes []string `json:"instanceTypes"`
		} `json:"nodes"`
		Notes []string `json:"notes"`
	}
	run := func(t *testing.T, input string) plan {
		t.Helper()
		cmd := newRootCommand()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetIn(strings.NewReader(input))
		cmd.SetArgs([]string{"simulate", "-f", "-", "-o", "json"})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("simulate: %v\n%s", err, errOut.String())
		}
		var p plan
		if err := json.Unmarshal([]byte(out.String()), &p); err != nil {
			t.Fatalf("decoding %s: %v", out.String(), err)
		}
		if len(p.Nodes) != 1 || len(p.Nodes[0].InstanceTypes) == 0 {
			t.Fatalf("plan %+v, want one new node", p)
		}
		return p
	}
	base := run(t, overlayPoolAndPod)
	first := base.Nodes[0].InstanceTypes[0]
	fam, _, _ := strings.Cut(first, ".")

	overlaid := run(t, overlayPoolAndPod+familyOverlay("dearer", "10", fam, "+100%"))
	if got := overlaid.Nodes[0].InstanceTypes[0]; strings.HasPrefix(got, fam+".") {
		t.Fatalf("with %s 100%% dearer the plan still starts with %s", fam, got)
	}
	if !strings.Contains(strings.Join(overlaid.Notes, "\n"), "applied 1 NodeOverlay") {
		t.Errorf("notes %q do not say the overlay was applied", overlaid.Notes)
	}

	conflicting := run(t, overlayPoolAndPod+familyOverlay("a", "10", fam, "+100%")+familyOverlay("b", "10", fam, "+50%"))
	if got := conflicting.Nodes[0].InstanceTypes[0]; got != first {
		t.Fatalf("with conflicting overlays the plan starts with %s, want %s as without any", got, first)
	}
	if notes := strings.Join(conflicting.Notes, "\n"); !strings.Contains(notes, "NodeOverlays a and b conflict") {
		t.Errorf("notes %q do not name the conflict", notes)
	}
}
