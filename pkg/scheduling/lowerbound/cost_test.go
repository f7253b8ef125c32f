package lowerbound

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func instanceType(name string, cpu, mem string, pods int64, offerings ...scheduling.Offering) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name: name,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
		Requirements: map[string][]string{corev1.LabelInstanceTypeStable: {name}},
		Offerings:    offerings,
	}
}

func TestPlanCost(t *testing.T) {
	small := instanceType("small", "2", "4Gi", 10,
		scheduling.Offering{Zone: "a", CapacityType: "spot", Price: 0.05, Available: true},
		scheduling.Offering{Zone: "b", CapacityType: "spot", Price: 0.04, Available: false},
		scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: 0.10, Available: true},
		scheduling.Offering{Zone: "b", CapacityType: "on-demand", Price: 0.09, Available: true},
	)
	large := instanceType("large", "4", "8Gi", 20,
		scheduling.Offering{Zone: "a", CapacityType: "spot", Price: 0.07, Available: true},
		scheduling.Offering{Zone: "b", CapacityType: "on-demand", Price: 0.20, Available: true},
	)
	in := func(key string, values ...string) scheduling.Requirement {
		return scheduling.Requirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	for _, tc := range []struct {
		name    string
		nodes   []*scheduling.NewNodeClaim
		want    float64
		wantErr bool
	}{
		{name: "no nodes", want: 0},
		{
			name:  "unconstrained takes the cheapest available offering",
			nodes: []*scheduling.NewNodeClaim{{InstanceTypes: []*scheduling.InstanceType{small, large}}},
			want:  0.05,
		},
		{
			name: "zone and capacity type narrow the offerings",
			nodes: []*scheduling.NewNodeClaim{{
				InstanceTypes: []*scheduling.InstanceType{small, large},
				Requirements:  []scheduling.Requirement{in(labelZone, "b"), in(v1.LabelCapacityType, "on-demand")},
			}},
			want: 0.09,
		},
		{
			name: "NotIn excludes",
			nodes: []*scheduling.NewNodeClaim{{
				InstanceTypes: []*scheduling.InstanceType{large},
				Requirements:  []scheduling.Requirement{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"spot"}}},
			}},
			want: 0.20,
		},
		{
			name: "nodes add up",
			nodes: []*scheduling.NewNodeClaim{
				{InstanceTypes: []*scheduling.InstanceType{small}},
				{InstanceTypes: []*scheduling.InstanceType{large}},
			},
			want: 0.12,
		},
		{
			name: "no compatible offering is an error",
			nodes: []*scheduling.NewNodeClaim{{
				InstanceTypes: []*scheduling.InstanceType{large},
				Requirements:  []scheduling.Requirement{in(labelZone, "c")},
			}},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanCost(&scheduling.Plan{NewNodeClaims: tc.nodes})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("PlanCost = %v, want %v", got, tc.want)
			}
		})
	}
}

func pod(name, cpu, mem string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace = name, "default"
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
	}}}}
	return p
}

func TestCompute(t *testing.T) {
	od := func(price float64) scheduling.Offering {
		return scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: price, Available: true}
	}
	small := instanceType("small", "2", "4Gi", 10, od(0.10))
	large := instanceType("large", "8", "16Gi", 40, od(0.30)) // cheaper per core
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
		}}
		return p
	}
	for _, tc := range []struct {
		name         string
		pools        []*scheduling.NodePool
		pods         []*corev1.Pod
		lp, lpAnti   float64
		distinct     int
		wantErrorSub string
	}{
		{
			name:   "cheapest per core wins, fractionally",
			pods:   []*corev1.Pod{pod("a", "4", "1Gi")},
			lp:     0.15,
			lpAnti: 0.15,
		},
		{
			name:  "NodePool requirements exclude types",
			pools: []*scheduling.NodePool{{Name: "p", Requirements: []scheduling.Requirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small"}}}}},
			pods:  []*corev1.Pod{pod("a", "4", "1Gi")},
			lp:    0.20, lpAnti: 0.20,
		},
		{
			name:     "anti-affinity forces distinct nodes",
			pods:     []*corev1.Pod{anti(pod("a", "1", "1Gi")), anti(pod("b", "1", "1Gi")), anti(pod("c", "1", "1Gi"))},
			lp:       0.1125,
			lpAnti:   0.30, // three nodes; three smalls are the cheapest way
			distinct: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools := tc.pools
			if pools == nil {
				pools = []*scheduling.NodePool{{Name: "p"}}
			}
			s := &scheduling.Snapshot{NodePools: pools, Pods: tc.pods,
				InstanceTypes: map[string][]*scheduling.InstanceType{"p": {small, large}}}
			b, err := Compute(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(b.LP-tc.lp) > 1e-9 || math.Abs(b.LPAnti-tc.lpAnti) > 1e-9 || b.DistinctNodes != tc.distinct {
				t.Errorf("got LP %v LP+anti %v distinct %d, want %v %v %d", b.LP, b.LPAnti, b.DistinctNodes, tc.lp, tc.lpAnti, tc.distinct)
			}
		})
	}
}
