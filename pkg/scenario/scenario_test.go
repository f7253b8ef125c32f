package scenario

import (
	"strings"
	"testing"
)

// validScenario is a small scenario; cases replace one fragment of it.
const validScenario = `{
  "meta": {"name": "tiny"},
  "instanceTypes": [
    {"name": "it-0", "architecture": "amd64", "operatingSystems": ["linux"],
     "capacity": {"cpu": "2", "memory": "4Gi", "pods": "10"},
     "overhead": {"kubeReserved": {"cpu": "100m"}, "systemReserved": {}, "evictionThreshold": {}},
     "allocatable": {"cpu": "1900m", "memory": "4Gi", "pods": "10"},
     "requirements": {"size": ["small"]},
     "offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.1, "available": true}]},
    {"name": "it-1", "architecture": "arm64", "operatingSystems": ["linux"],
     "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"},
     "overhead": {"kubeReserved": {}, "systemReserved": {}, "evictionThreshold": {}},
     "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
     "requirements": {},
     "offerings": [
       {"zone": "z1", "capacityType": "on-demand", "price": 0.2, "available": true},
       {"zone": "z2", "capacityType": "on-demand", "price": 0.2, "available": true}]}
  ],
  "nodePools": [
    {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
     "spec": {"template": {"spec": {"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
       "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}}
  ],
  "pods": [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0", "namespace": "default"},
     "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
     "spec": {"containers": [{"name": "c"}]}}
  ]
}`

func TestLoad(t *testing.T) {
	s, err := Load([]byte(validScenario))
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot
	if s.Meta.Name != "tiny" || len(snap.NodePools) != 1 || len(snap.Pods) != 2 || len(snap.InstanceTypes["default"]) != 2 {
		t.Fatalf("unexpected snapshot: meta %+v, %d pools, %d pods, %d types", s.Meta, len(snap.NodePools), len(snap.Pods), len(snap.InstanceTypes["default"]))
	}
	it := snap.InstanceTypes["default"][0]
	for key, want := range map[string]string{
		"node.kubernetes.io/instance-type": "[it-0]",
		"kubernetes.io/arch":               "[amd64]",
		"kubernetes.io/os":                 "[linux]",
		"topology.kubernetes.io/zone":      "[z1]",
		"karpenter.sh/capacity-type":       "[spot]",
		"size":                             "[small]",
	} {
		if got := strings.Join(it.Requirements[key], " "); "["+got+"]" != want {
			t.Errorf("requirements[%s] = [%s], want %s", key, got, want)
		}
	}
	if snap.Pods[1].Namespace != "default" {
		t.Errorf("namespace not defaulted: %q", snap.Pods[1].Namespace)
	}
	if np := snap.NodePools[0]; np.NodeClassRef.Kind != "EC2NodeClass" || len(np.Requirements) != 1 {
		t.Errorf("nodepool not adapted: %+v", np)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     string
	}{
		{
			name: "negative price",
			old:  `"price": 0.2, "available": true}]}`, new: `"price": -1, "available": true}]}`,
			want: `instanceTypes[1] "it-1": offerings[1].price: must be >= 0, got -1`,
		},
		{
			name: "unknown capacity type",
			old:  `"capacityType": "spot"`, new: `"capacityType": "preemptible"`,
			want: `instanceTypes[0] "it-0": offerings[0].capacityType: must be spot, on-demand or reserved, got "preemptible"`,
		},
		{
			name: "missing offerings",
			old:  `"offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.1, "available": true}]`, new: `"offerings": []`,
			want: `instanceTypes[0] "it-0": offerings: must list at least one offering`,
		},
		{
			name: "allocatable disagrees with overhead",
			old:  `"allocatable": {"cpu": "1900m"`, new: `"allocatable": {"cpu": "2"`,
			want: `instanceTypes[0] "it-0": allocatable.cpu: 2 does not equal capacity minus overhead (1900m)`,
		},
		{
			name: "bad quantity",
			old:  `"capacity": {"cpu": "4"`, new: `"capacity": {"cpu": "four"`,
			want: `instanceTypes[1] "it-1": quantities must match the regular expression`,
		},
		{
			name: "unknown instance type field",
			old:  `"architecture": "arm64"`, new: `"arch": "arm64"`,
			want: `instanceTypes[1] "it-1": json: unknown field "arch"`,
		},
		{
			name: "architecture disagrees with requirements",
			old:  `"requirements": {"size": ["small"]}`, new: `"requirements": {"kubernetes.io/arch": ["arm64"]}`,
			want: `instanceTypes[0] "it-0": requirements["kubernetes.io/arch"]: [arm64] disagrees with architecture [amd64]`,
		},
		{
			name: "duplicate instance type",
			old:  `{"name": "it-1"`, new: `{"name": "it-0"`,
			want: `instanceTypes[1] "it-0": name: duplicates instanceTypes[0]`,
		},
		{
			name: "unknown operator",
			old:  `"operator": "In"`, new: `"operator": "Inn"`,
			want: `nodePools[0] "default": spec.template.spec.requirements[0]: operator: unknown operator "Inn"`,
		},
		{
			name: "In without values",
			old:  `"operator": "In", "values": ["amd64"]`, new: `"operator": "In"`,
			want: `nodePools[0] "default": spec.template.spec.requirements[0]: values: operator In needs at least one value`,
		},
		{
			name: "nodepool weight",
			old:  `"spec": {"template"`, new: `"spec": {"weight": 101, "template"`,
			want: `nodePools[0] "default": spec.weight: must be between 1 and 100, got 101`,
		},
		{
			name: "nodepool without name",
			old:  `"metadata": {"name": "default"}`, new: `"metadata": {}`,
			want: `nodePools[0]: metadata.name: must be set`,
		},
		{
			name: "pod without name",
			old:  `"metadata": {"name": "p1"}`, new: `"metadata": {}`,
			want: `pods[1]: metadata.name: must be set`,
		},
		{
			name: "pod with negative request",
			old:  `"requests": {"cpu": "1"}`, new: `"requests": {"cpu": "-1"}`,
			want: `pods[0] "default/p0": spec.containers[0].resources.requests.cpu: must be >= 0, got -1`,
		},
		{
			name: "pod with unknown field",
			old:  `"containers": [{"name": "c"}]`, new: `"containers": [{"name": "c", "requets": {}}]`,
			want: `pods[1] "p1": json: unknown field "requets"`,
		},
		{
			name: "bound pod",
			old:  `"spec": {"containers": [{"name": "c"}]}`, new: `"spec": {"nodeName": "n1", "containers": [{"name": "c"}]}`,
			want: `pods[1] "default/p1": spec.nodeName: scenario pods must be pending, got bound to "n1"`,
		},
		{
			name: "duplicate pod",
			old:  `"metadata": {"name": "p1"}`, new: `"metadata": {"name": "p0"}`,
			want: `pods[1] "default/p0": metadata.name: duplicates pods[0]`,
		},
		{
			name: "unknown top-level key",
			old:  `"meta": {"name": "tiny"}`, new: `"meta": {"name": "tiny"}, "nodes": []`,
			want: `json: unknown field "nodes"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validScenario, tc.old) {
				t.Fatalf("fragment %q not in the valid scenario", tc.old)
			}
			_, err := Load([]byte(strings.Replace(validScenario, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatalf("Load succeeded, want error %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestLoadSharedScenarios(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods int
	}{{"diverse-100", 100}, {"generic-5000", 5000}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadFile(sharedScenario(t, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Snapshot.Pods) != tc.pods || len(s.Snapshot.InstanceTypes["default"]) != 400 || s.Meta.Name != tc.name {
				t.Errorf("got %d pods, %d types, meta %q", len(s.Snapshot.Pods), len(s.Snapshot.InstanceTypes["default"]), s.Meta.Name)
			}
		})
	}
}
