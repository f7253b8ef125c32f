package statuspage

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// pod is a pod requesting cpu and memory, bound to node unless it is "".
func pod(ns, name, node, cpu, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}},
	}
}

func daemonPod(name, node string) *corev1.Pod {
	p := pod("kube-system", name, node, "100m", "128Mi")
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: &yes}}
	return p
}

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

func instanceType(name, cpu, memory string, prices map[string]float64) *scheduling.InstanceType {
	it := &scheduling.InstanceType{Name: name, Capacity: resources(cpu, memory)}
	for ct, price := range prices {
		it.Offerings = append(it.Offerings, scheduling.Offering{Zone: "zone-a", CapacityType: ct, Price: price, Available: true})
	}
	return it
}

func nodeLabels(pool, typ, capacityType string) map[string]string {
	return map[string]string{
		v1.LabelNodePool:               pool,
		corev1.LabelInstanceTypeStable: typ,
		corev1.LabelTopologyZone:       "zone-a",
		v1.LabelCapacityType:           capacityType,
	}
}

var (
	small = instanceType("small", "2", "4Gi", map[string]float64{"on-demand": 0.05, "spot": 0.02})
	large = instanceType("large", "8", "32Gi", map[string]float64{"on-demand": 0.40, "spot": 0.15})
)

// cluster is a live picture: a ready node with bound pods, a NodeClaim on
// its way with a nominated pod, a node being deleted, a node joiner does
// not manage, and three pending pods.
func cluster() *scheduling.Snapshot {
	return &scheduling.Snapshot{
		Now:           now,
		NodePools:     []*scheduling.NodePool{{Name: "default"}},
		InstanceTypes: map[string][]*scheduling.InstanceType{"default": {small, large}},
		Nodes: []*scheduling.ExistingNode{
			{
				Name: "default-abcde", NodeClaim: "default-abcde", NodePool: "default", Initialized: true,
				Labels:      nodeLabels("default", "large", "spot"),
				Allocatable: resources("8", "32Gi"),
				Pods: []*corev1.Pod{
					pod("shop", "web-0", "default-abcde", "2", "4Gi"),
					pod("shop", "web-1", "default-abcde", "2", "4Gi"),
					daemonPod("agent-1", "default-abcde"),
				},
			},
			{
				Name: "default-fghij", NodeClaim: "default-fghij", NodePool: "default",
				Labels:      map[string]string{v1.LabelNodePool: "default", corev1.LabelTopologyZone: "zone-a"},
				Allocatable: resources("2", "4Gi"),
				Pods: []*corev1.Pod{
					pod("shop", "web-2", "", "1", "1Gi"),
					daemonPod("agent-template", ""),
				},
			},
			{
				Name: "default-klmno", NodeClaim: "default-klmno", NodePool: "default", Initialized: true, MarkedForDeletion: true,
				Labels:      nodeLabels("default", "small", "on-demand"),
				Allocatable: resources("2", "4Gi"),
				Pods:        []*corev1.Pod{daemonPod("agent-2", "default-klmno")},
			},
			{
				Name: "control-plane", Initialized: true,
				Labels:      map[string]string{corev1.LabelInstanceTypeStable: "m5.large"},
				Allocatable: resources("2", "8Gi"),
				Pods:        []*corev1.Pod{pod("kube-system", "coredns", "control-plane", "100m", "70Mi")},
			},
		},
		Pods: []*corev1.Pod{
			pod("batch", "huge", "", "64", "1Ti"),
			pod("shop", "web-3", "", "1", "1Gi"),
			pod("shop", "web-4", "", "1", "1Gi"),
		},
	}
}

// verdicts are the provisioner's last batch: the huge pod fits nowhere.
func lastBatch(snap *scheduling.Snapshot) *scheduling.Plan {
	return &scheduling.Plan{Unschedulable: []scheduling.PodError{{
		Pod: snap.Pods[0],
		NodePools: map[string]scheduling.Reason{
			"default": scheduling.NoInstanceType{Cause: scheduling.NoTypeFits, Requests: resources("64", "1Ti")},
		},
		Existing: scheduling.ExistingNodes{Groups: []scheduling.NodeGroup{
			{Count: 3, Reason: scheduling.InsufficientResource{}},
			{Count: 1, Reason: scheduling.MarkedForDeletion{}},
		}},
	}}}
}

// whatIf is a simulated plan on cluster(): web-3 goes to the ready node,
// web-4 to a new node, the huge pod nowhere.
func whatIf(snap *scheduling.Snapshot) *scheduling.Plan {
	plan := lastBatch(snap)
	plan.Existing = []scheduling.ExistingPlacement{{Node: "default-abcde", Pods: []*corev1.Pod{snap.Pods[1]}}}
	plan.NewNodeClaims = []*scheduling.NewNodeClaim{{
		NodePool: "default",
		Requirements: []scheduling.Requirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
			{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
		},
		InstanceTypes: []*scheduling.InstanceType{small, large},
		Pods:          []*corev1.Pod{snap.Pods[2]},
		Requests:      resources("1100m", "1152Mi"),
		Price:         0.02,
	}}
	return plan
}

// burstable is one ready node of a burstable type whose pod requests all
// its CPU, above the type's baseline.
func burstable() *scheduling.Snapshot {
	it := instanceType("t4g.small", "2", "2Gi", map[string]float64{"on-demand": 0.0168})
	it.Burst = &scheduling.Burst{BaselineMilliCPU: 400, SurplusPerVCPUHour: 0.05}
	it.VolumePrice = 0.002
	return &scheduling.Snapshot{
		Now:           now,
		NodePools:     []*scheduling.NodePool{{Name: "default"}},
		InstanceTypes: map[string][]*scheduling.InstanceType{"default": {it}},
		Nodes: []*scheduling.ExistingNode{{
			Name: "burst-1", NodeClaim: "burst-1", NodePool: "default", Initialized: true,
			Labels:      nodeLabels("default", "t4g.small", "on-demand"),
			Allocatable: resources("2", "2Gi"),
			Pods:        []*corev1.Pod{pod("shop", "cpu-hog", "burst-1", "2", "512Mi")},
		}},
	}
}
