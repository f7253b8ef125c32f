package scenario

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func snapshotOf(t *testing.T, yaml string, opts SnapshotOptions) (*Manifests, *snapshotView) {
	t.Helper()
	m := &Manifests{}
	if err := m.Read("test.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	s, err := m.Snapshot(opts)
	if err != nil {
		t.Fatal(err)
	}
	v := &snapshotView{pools: map[string]int{}}
	for _, np := range s.NodePools {
		v.pools[np.Name] = len(s.InstanceTypes[np.Name])
	}
	for _, p := range s.Pods {
		v.pods = append(v.pods, podKey(p))
	}
	for _, p := range s.DaemonSets {
		v.daemons = append(v.daemons, podKey(p))
	}
	for _, n := range s.Nodes {
		names := []string{}
		for _, p := range n.Pods {
			names = append(names, podKey(p))
		}
		v.nodes = append(v.nodes, n.Name+"["+strings.Join(names, " ")+"]")
	}
	return m, v
}

type snapshotView struct {
	pools   map[string]int
	pods    []string
	daemons []string
	nodes   []string
}

func TestManifestsExample(t *testing.T) {
	m, err := ReadManifestFiles("../../examples/simulate/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Snapshot(SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, p := range s.Pods {
		pods = append(pods, podKey(p))
	}
	want := []string{"ml/trainer", "batch/too-big", "shop/web-0", "shop/web-1", "shop/web-2", "shop/web-3", "shop/web-4", "shop/web-5", "shop/cache-0", "shop/cache-1", "shop/cache-2"}
	if !slices.Equal(pods, want) {
		t.Errorf("pods = %v, want %v", pods, want)
	}
	if len(s.DaemonSets) != 1 || s.DaemonSets[0].Name != "node-exporter" || s.DaemonSets[0].Namespace != "monitoring" {
		t.Errorf("daemonsets = %v", s.DaemonSets)
	}
	if len(s.NodePools) != 2 {
		t.Fatalf("%d nodepools", len(s.NodePools))
	}
	for _, np := range s.NodePools {
		its := s.InstanceTypes[np.Name]
		if len(its) == 0 {
			t.Fatalf("no instance types for %s", np.Name)
		}
		if z := its[0].Requirements[corev1.LabelTopologyZone]; !slices.Equal(z, []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"}) {
			t.Errorf("zones = %v, want the SimNodeClass's", z)
		}
	}
	web := s.Pods[2]
	if web.Labels["app"] != "web" || web.OwnerReferences[0].Kind != "Deployment" || web.Spec.Containers[0].Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("web pod not built from its template: %+v", web.ObjectMeta)
	}
}

const kubectlDump = `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node-a
    labels:
      topology.kubernetes.io/zone: eu-west-1b
      karpenter.sh/nodepool: default
      karpenter.sh/initialized: "true"
  status:
    allocatable: {cpu: 3920m, memory: 15Gi, pods: "58"}
    capacity: {cpu: "4", memory: 16Gi, pods: "58"}
- apiVersion: v1
  kind: Pod
  metadata: {name: api-7d4b9c-abcde, namespace: prod, labels: {app: api}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: api-7d4b9c, uid: u1, controller: true}]}
  spec:
    nodeName: node-a
    containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: api-7d4b9c-fghij, namespace: prod, labels: {app: api}}
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  status: {phase: Pending}
- apiVersion: v1
  kind: Pod
  metadata: {name: done, namespace: prod}
  spec:
    nodeName: node-a
    containers: [{name: c, image: i}]
  status: {phase: Succeeded}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: api, namespace: prod}
  spec:
    replicas: 4
    selector: {matchLabels: {app: api}}
    template:
      metadata: {labels: {app: api}}
      spec:
        containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: api-7d4b9c, namespace: prod, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: api, uid: d1, controller: true}]}
  spec:
    replicas: 4
    selector: {matchLabels: {app: api}}
    template:
      metadata: {labels: {app: api}}
      spec:
        containers: [{name: c, image: i}]
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: prod}
  spec:
    replicas: 2
    serviceName: db
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec:
        containers: [{name: c, image: i}]
- apiVersion: batch/v1
  kind: Job
  metadata: {name: report, namespace: prod}
  spec:
    parallelism: 5
    completions: 3
    template:
      metadata: {labels: {job: report}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: i}]
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: api, namespace: prod}
  data: {port: "80"}
`

func TestManifestsKubectlDump(t *testing.T) {
	m, v := snapshotOf(t, kubectlDump, SnapshotOptions{})
	wantPods := []string{"prod/api-7d4b9c-fghij", "prod/api-0", "prod/api-1", "prod/db-0", "prod/db-1", "prod/report-0", "prod/report-1", "prod/report-2"}
	if !slices.Equal(v.pods, wantPods) {
		t.Errorf("pending pods = %v, want %v", v.pods, wantPods)
	}
	if want := []string{"node-a[prod/api-7d4b9c-abcde]"}; !slices.Equal(v.nodes, want) {
		t.Errorf("nodes = %v, want %v", v.nodes, want)
	}
	if got := m.BoundElsewhere(); len(got) != 0 {
		t.Errorf("bound elsewhere = %v, want none", got)
	}
	if want := []string{"ConfigMap prod/api"}; !slices.Equal(m.Ignored, want) {
		t.Errorf("ignored = %v, want %v", m.Ignored, want)
	}
}

func TestManifestsZonesFromNodes(t *testing.T) {
	yaml := `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1c, eu-west-1b]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {topology.kubernetes.io/zone: eu-west-1b}
status:
  allocatable: {cpu: "2"}
`
	m := &Manifests{}
	_ = m.Read("x", []byte(yaml))
	snap, err := m.Snapshot(SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if z := snap.InstanceTypes["default"][0].Requirements[corev1.LabelTopologyZone]; !slices.Equal(z, []string{"eu-west-1b", "eu-west-1c"}) {
		t.Errorf("zones = %v, want those of the existing nodes and NodePools", z)
	}
}

func TestManifestsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string
	}{
		{
			name: "negative request in a deployment template",
			yaml: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i, resources: {requests: {cpu: '-1'}}}]\n",
			want: `test.yaml: document 1 (Deployment web): spec.template.spec.containers[0].resources.requests.cpu: must be >= 0, got -1`,
		},
		{
			name: "negative replicas",
			yaml: "---\n# c\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: -2\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: i}]\n",
			want: `test.yaml: document 2 (Deployment shop/web): spec.replicas: must be >= 0, got -2`,
		},
		{
			name: "nodepool operator",
			yaml: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template:\n    spec:\n      requirements: [{key: k, operator: Near}]\n      nodeClassRef: {group: g, kind: k, name: nc}\n",
			want: `test.yaml: document 1 (NodePool np): spec.template.spec.requirements[0]: operator: unknown operator "Near"`,
		},
		{
			name: "list item",
			yaml: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: ok}\n  spec: {containers: [{name: c, image: i}]}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: bad}\n  spec: {containers: []}\n",
			want: `test.yaml: document 1 (List) items[1] (Pod bad): spec.containers: must list at least one container`,
		},
		{
			name: "typo in a pod",
			yaml: "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {containers: [{name: c, image: i, resource: {}}]}\n",
			want: `test.yaml: document 1 (Pod ns/p): json: unknown field "resource"`,
		},
		{
			name: "missing kind",
			yaml: "apiVersion: v1\nmetadata: {name: p}\n",
			want: `test.yaml: document 1: kind: must be set`,
		},
		{
			name: "selector does not match template",
			yaml: "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: c}}\n    spec:\n      containers: [{name: c, image: i}]\n",
			want: `test.yaml: document 1 (StatefulSet db): spec.selector: does not match the template's labels map[a:c]`,
		},
		{
			name: "duplicate nodepool",
			yaml: "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: []}}}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {requirements: []}}}\n",
			want: `test.yaml: document 2 (NodePool np): metadata.name: NodePool "np" is also defined at test.yaml: document 1 (NodePool np)`,
		},
		{
			name: "bad yaml",
			yaml: "apiVersion: v1\nkind: Pod\n  metadata: x\n",
			want: `test.yaml: document 1: yaml: line 3: mapping values are not allowed`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifests{}
			err := m.Read("test.yaml", []byte(tc.yaml))
			if err == nil {
				_, err = m.Snapshot(SnapshotOptions{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestManifestsNodeClasses(t *testing.T) {
	yaml := `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: sim}
spec: {template: {spec: {requirements: [], nodeClassRef: {group: sim.joiner.dev, kind: SimNodeClass, name: small}}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: aws}
spec: {template: {spec: {requirements: [], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}}
---
apiVersion: sim.joiner.dev/v1alpha1
kind: SimNodeClass
metadata: {name: small}
spec:
  catalog: {instanceFamilies: [t4g]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  kubelet: {maxPods: 20}
status:
  subnets:
  - {id: subnet-1, zone: eu-central-1a}
  - {id: subnet-2, zone: eu-central-1b}
`
	m := &Manifests{}
	if err := m.Read("x.yaml", []byte(yaml)); err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim := snap.InstanceTypes["sim"]
	if len(sim) != 7 || sim[0].Name != "t4g.nano" {
		t.Errorf("sim NodePool got %d types starting %s, want the 7 t4g sizes", len(sim), sim[0].Name)
	}
	if z := sim[0].Requirements[corev1.LabelTopologyZone]; !slices.Equal(z, []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"}) {
		t.Errorf("sim zones = %v, want the SimNodeClass defaults", z)
	}
	aws := snap.InstanceTypes["aws"]
	if z := aws[0].Requirements[corev1.LabelTopologyZone]; !slices.Equal(z, []string{"eu-central-1a", "eu-central-1b"}) {
		t.Errorf("aws zones = %v, want the EC2NodeClass subnets' zones", z)
	}
	if p := aws[len(aws)-1].Capacity[corev1.ResourcePods]; p.Value() != 20 {
		t.Errorf("pods = %s, want kubelet maxPods 20", p.String())
	}
}
