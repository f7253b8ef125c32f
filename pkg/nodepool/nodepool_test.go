package nodepool

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const full = `{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
 "spec": {"weight": 10, "limits": {"cpu": "100"},
  "template": {"metadata": {"labels": {"team": "ml"}, "annotations": {"a": "b"}},
   "spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"], "minValues": 2}],
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "agent", "effect": "NoExecute"}],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}},
 "status": {"resources": {"cpu": "8"}}}`

func TestDecode(t *testing.T) {
	np, err := Decode([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	cpu := np.Limits[corev1.ResourceCPU]
	used := np.InUse[corev1.ResourceCPU]
	switch {
	case np.Name != "gpu" || np.Weight != 10:
		t.Errorf("name/weight = %s/%d", np.Name, np.Weight)
	case np.Labels["team"] != "ml" || np.Annotations["a"] != "b":
		t.Errorf("template metadata lost: %v %v", np.Labels, np.Annotations)
	case len(np.Requirements) != 2 || np.Requirements[0].Operator != corev1.NodeSelectorOpGt || *np.Requirements[1].MinValues != 2:
		t.Errorf("requirements = %+v", np.Requirements)
	case len(np.Taints) != 1 || len(np.StartupTaints) != 1:
		t.Errorf("taints = %v / %v", np.Taints, np.StartupTaints)
	case np.NodeClassRef.Kind != "EC2NodeClass" || np.NodeClassRef.Group != "karpenter.k8s.aws" || np.NodeClassRef.Name != "default":
		t.Errorf("nodeClassRef = %+v", np.NodeClassRef)
	case cpu.String() != "100" || used.String() != "8":
		t.Errorf("limits %s, in use %s", cpu.String(), used.String())
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"unknown field", `"weight": 10`, `"wieght": 10`, `unknown field "wieght"`},
		{"weight", `"weight": 10`, `"weight": 0`, `spec.weight: must be between 1 and 100, got 0`},
		{"Gt value", `"values": ["0"]`, `"values": ["zero"]`, `spec.template.spec.requirements[0]: values[0]: operator Gt needs an integer, got "zero"`},
		{"minValues", `"minValues": 2`, `"minValues": 3`, `spec.template.spec.requirements[1]: minValues: 3 exceeds the 2 values of operator In`},
		{"taint effect", `"effect": "NoSchedule"`, `"effect": "Sometimes"`, `spec.template.spec.taints[0]: effect: unknown effect "Sometimes"`},
		{"negative limit", `"cpu": "100"`, `"cpu": "-1"`, `spec.limits.cpu: must be >= 0, got -1`},
		{"restricted label", `"team": "ml"`, `"karpenter.sh/nodepool": "x"`, `spec.template.metadata.labels[karpenter.sh/nodepool]`},
		{"kind", `"kind": "NodePool"`, `"kind": "NodeClaim"`, `kind: want NodePool, got "NodeClaim"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(full, tc.old) {
				t.Fatalf("%q not in the fixture", tc.old)
			}
			_, err := Decode([]byte(strings.Replace(full, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A NodePool without a node class can still be simulated.
	if _, err := Decode([]byte(`{"metadata": {"name": "np"}, "spec": {"template": {"spec": {"requirements": []}}}}`)); err != nil {
		t.Errorf("minimal NodePool: %v", err)
	}
}
