package disruption_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// The fixtures: one zone, instance types c<n> with n cpu and 4 GiB per
// cpu at $n/h (on-demand and spot), and a NodePool that consolidates at
// once with a budget of 100%.

var fixtureNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func instanceType(name string, cpu int, price float64) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name: name,
		Requirements: map[string][]string{
			corev1.LabelInstanceTypeStable: {name}, corev1.LabelArchStable: {"amd64"}, corev1.LabelOSStable: {"linux"},
			corev1.LabelTopologyZone: {"z1"}, v1.LabelCapacityType: {"on-demand", "spot"},
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewQuantity(int64(cpu), resource.DecimalSI), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 4*cpu)),
			corev1.ResourcePods: resource.MustParse("110"),
		},
		Offerings: []scheduling.Offering{
			{Zone: "z1", CapacityType: "on-demand", Price: price, Available: true},
			{Zone: "z1", CapacityType: "spot", Price: price * 0.5, Available: true},
		},
	}
}

func catalog() []*scheduling.InstanceType {
	return []*scheduling.InstanceType{instanceType("c1", 1, 1), instanceType("c2", 2, 2), instanceType("c4", 4, 4), instanceType("c8", 8, 8)}
}

func pool(mods ...func(*v1.NodePool)) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		Budgets:             []v1.Budget{{Nodes: "100%"}},
	}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	for _, m := range mods {
		m(np)
	}
	return np
}

// node is a managed, initialised, consolidatable node of type it.
type node struct {
	name, it, capacityType string
	pods                   []*corev1.Pod
	mods                   []func(*disruption.Node, *scheduling.ExistingNode)
}

func pod(name, cpu string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}, CreationTimestamp: metav1.NewTime(fixtureNow.Add(-time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi"),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func annotated(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { metav1.SetMetaDataAnnotation(&p.ObjectMeta, k, v) }
}

func daemon(p *corev1.Pod) {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &yes}}
}

func pdb(name string, allowed int32, selector map[string]string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: selector}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func condition(t string, status metav1.ConditionStatus, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: t, LastTransitionTime: metav1.NewTime(at)}
}

// input builds the engine's Input for nodes of np.
func input(t testing.TB, np *v1.NodePool, nodes ...node) *disruption.Input {
	t.Helper()
	its := catalog()
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	snap := &scheduling.Snapshot{Now: fixtureNow, NodePools: []*scheduling.NodePool{nodepool.FromNodePool(np)}, InstanceTypes: map[string][]*scheduling.InstanceType{np.Name: its}}
	in := &disruption.Input{Now: fixtureNow, Cluster: snap, NodePools: map[string]*v1.NodePool{np.Name: np}}
	for _, n := range nodes {
		it := byName[n.it]
		if it == nil {
			t.Fatalf("no instance type %q", n.it)
		}
		ct := n.capacityType
		if ct == "" {
			ct = "on-demand"
		}
		price := it.Offerings[0].Price
		if ct == "spot" {
			price = it.Offerings[1].Price
		}
		labels := map[string]string{
			corev1.LabelInstanceTypeStable: n.it, corev1.LabelTopologyZone: "z1", v1.LabelCapacityType: ct, corev1.LabelHostname: n.name,
			v1.LabelNodePool: np.Name, v1.LabelNodeInitialized: "true", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		}
		for _, p := range n.pods {
			p.Spec.NodeName = n.name
		}
		meta := metav1.ObjectMeta{Name: n.name, Labels: labels, CreationTimestamp: metav1.NewTime(fixtureNow.Add(-24 * time.Hour))}
		nc := &v1.NodeClaim{ObjectMeta: meta}
		nc.Status.Conditions = []metav1.Condition{condition(v1.ConditionTypeInitialized, metav1.ConditionTrue, meta.CreationTimestamp.Time), condition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, meta.CreationTimestamp.Time)}
		dn := disruption.Node{
			Name: n.name, Node: &corev1.Node{ObjectMeta: meta}, NodeClaim: nc, NodePool: np.Name, Pods: n.pods,
			InstanceType: n.it, Zone: "z1", CapacityType: ct, Price: price, Initialized: true,
		}
		en := &scheduling.ExistingNode{Name: n.name, NodeClaim: n.name, NodePool: np.Name, Labels: labels, Initialized: true, Allocatable: it.Allocatable(), Pods: n.pods}
		for _, m := range n.mods {
			m(&dn, en)
		}
		in.Nodes = append(in.Nodes, dn)
		snap.Nodes = append(snap.Nodes, en)
	}
	return in
}

func verdictOf(t testing.TB, d *disruption.Decision, name string) disruption.Verdict {
	t.Helper()
	for _, v := range d.Verdicts {
		if v.Node == name {
			return v
		}
	}
	t.Fatalf("no verdict for %q", name)
	return disruption.Verdict{}
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
