package lowerbound

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func antiPod(p *corev1.Pod, app string) *corev1.Pod {
	p.Labels = map[string]string{"app": app}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}}
	return p
}

func inZone(p *corev1.Pod, zone string) *corev1.Pod {
	p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	return p
}

func burstable(it *scheduling.InstanceType, baseMilli int64, perVCPUHour float64) *scheduling.InstanceType {
	it.Burst = &scheduling.Burst{BaselineMilliCPU: baseMilli, SurplusPerVCPUHour: perVCPUHour}
	return it
}

// TestConfigurationsByHand checks cases whose optimum is worked out by
// hand: the configuration bound sees what the resource LP cannot.
func TestConfigurationsByHand(t *testing.T) {
	od := func(zone string, price float64) scheduling.Offering {
		return scheduling.Offering{Zone: zone, CapacityType: "on-demand", Price: price, Available: true}
	}
	for _, tc := range []struct {
		name   string
		types  []*scheduling.InstanceType
		pods   []*corev1.Pod
		lp     float64 // the resource LP
		config float64 // the configuration LP (= the optimum here)
	}{
		{
			// Small: 1 pod of 1.5 cpu a node ($1/pod), large: 2 ($1.25/pod).
			name:   "pods that cannot share a node by their sizes",
			types:  []*scheduling.InstanceType{instanceType("small", "2", "8Gi", 10, od("a", 1)), instanceType("large", "4", "16Gi", 10, od("a", 2.5))},
			pods:   []*corev1.Pod{pod("a", "1500m", "1Gi"), pod("b", "1500m", "1Gi"), pod("c", "1500m", "1Gi")},
			lp:     2.25,
			config: 3,
		},
		{
			name:   "anti-affinity: one member a node",
			types:  []*scheduling.InstanceType{instanceType("small", "2", "8Gi", 10, od("a", 1)), instanceType("large", "8", "32Gi", 10, od("a", 3))},
			pods:   []*corev1.Pod{antiPod(pod("a", "500m", "1Gi"), "w"), antiPod(pod("b", "500m", "1Gi"), "w"), pod("c", "1", "1Gi"), pod("d", "1", "1Gi")},
			lp:     1.1333333333333333, // 1/30 small + 11/30 large: 3 cpu and 4 pods
			config: 2,                  // two smalls: (a, c) and (b, d)
		},
		{
			name:   "a zone only the dear offering serves",
			types:  []*scheduling.InstanceType{instanceType("small", "2", "8Gi", 10, od("a", 1), od("b", 3))},
			pods:   []*corev1.Pod{inZone(pod("a", "1", "1Gi"), "b"), pod("b", "1", "1Gi")},
			lp:     1,
			config: 3, // one node in b holds both
		},
		{
			// Billed: 600m above the 400m baseline at $0.05 per vCPU-hour.
			name:   "a burstable node pays credits for its pods' CPU",
			types:  []*scheduling.InstanceType{burstable(instanceType("t", "2", "8Gi", 10, od("a", 1)), 400, 0.05)},
			pods:   []*corev1.Pod{pod("a", "1", "1Gi")},
			lp:     0.54, // half the full-CPU column: (1 + 1.6·0.05) / 2
			config: 1.03,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{{Name: "p"}}, Pods: tc.pods,
				InstanceTypes: map[string][]*scheduling.InstanceType{"p": tc.types}}
			lp, err := Compute(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Configurations(s, scheduling.Options{}, ConfigLimits{})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(lp.LP-tc.lp) > 1e-6 {
				t.Errorf("LP = %v, want %v", lp.LP, tc.lp)
			}
			if !got.Converged || math.Abs(got.Value-tc.config) > 1e-3*tc.config {
				t.Errorf("configuration bound = %v (LP %v, converged %v), want %v", got.Value, got.LP, got.Converged, tc.config)
			}
		})
	}
}

// TestConfigurationsNeverAboveOptimum compares the bound with the true
// optimum, found by trying every partition of a few pods into nodes, on
// random small instances with zones, capacity types, node selectors,
// anti-affinity and a DaemonSet; and with the resource LP, which it must
// never fall below.
func TestConfigurationsNeverAboveOptimum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 33))
	zones := []string{"a", "b"}
	cts := []string{"on-demand", "spot"}
	for i := range 150 {
		var types []*scheduling.InstanceType
		for ti := range 1 + r.IntN(3) {
			cpu := 1 + r.IntN(4)
			var offs []scheduling.Offering
			for _, z := range zones {
				for _, ct := range cts {
					if r.IntN(3) > 0 {
						offs = append(offs, scheduling.Offering{Zone: z, CapacityType: ct, Price: float64(cpu)*(0.5+r.Float64()) + 0.1, Available: r.IntN(6) > 0})
					}
				}
			}
			it := instanceType(fmt.Sprintf("t%d", ti), fmt.Sprint(cpu), fmt.Sprintf("%dGi", 2*cpu+r.IntN(3)), int64(2+r.IntN(4)), offs...)
			it.Overhead.KubeReserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
			types = append(types, it)
		}
		var ps []*corev1.Pod
		for pi := range 1 + r.IntN(6) {
			p := pod(fmt.Sprintf("p%d", pi), fmt.Sprintf("%dm", 250*(1+r.IntN(6))), fmt.Sprintf("%dMi", 512*(1+r.IntN(6))))
			switch r.IntN(5) {
			case 0:
				p = antiPod(p, "w")
			case 1:
				p = inZone(p, zones[r.IntN(2)])
			case 2:
				p.Spec.NodeSelector = map[string]string{v1.LabelCapacityType: cts[r.IntN(2)]}
			}
			ps = append(ps, p)
		}
		var daemons []*corev1.Pod
		if r.IntN(3) == 0 {
			daemons = append(daemons, pod("ds", "100m", "128Mi"))
		}
		s := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{{Name: "p"}}, Pods: ps, DaemonSets: daemons,
			InstanceTypes: map[string][]*scheduling.InstanceType{"p": types}}
		opt, placeable := bruteOptimum(s)
		got, err := Configurations(s, scheduling.Options{}, ConfigLimits{})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got.Unplaceable != len(ps)-placeable {
			t.Errorf("case %d: %d unplaceable, want %d", i, got.Unplaceable, len(ps)-placeable)
		}
		if got.Value > opt+1e-6 {
			t.Fatalf("case %d: bound %v above the optimum %v", i, got.Value, opt)
		}
		if placeable == len(ps) && len(ps) > 0 {
			lp, err := Compute(s, scheduling.Options{})
			if err == nil && got.Converged && got.Value < lp.LP-1e-6 {
				t.Errorf("case %d: converged bound %v below the resource LP %v", i, got.Value, lp.LP)
			}
		}
		if !got.Converged {
			t.Errorf("case %d: did not converge in %d iterations: bound %v, master %v, optimum %v", i, got.Iterations, got.Value, got.LP, opt)
		}
	}
}

// bruteOptimum is the cheapest way to place the pods that fit some
// offering alone, by trying every partition into nodes, and how many
// those are.
func bruteOptimum(s *scheduling.Snapshot) (float64, int) {
	np := s.NodePools[0]
	type offer struct {
		it    *scheduling.InstanceType
		o     scheduling.Offering
		alloc corev1.ResourceList
		node  *corev1.Node // as the offering launches it, for the pods' own checks
	}
	var offers []offer
	for _, it := range s.InstanceTypes[np.Name] {
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			alloc := it.Allocatable()
			for _, d := range s.DaemonSets {
				for name, q := range pods.Requests(d) {
					a := alloc[name]
					a.Sub(q)
					alloc[name] = a
				}
				p := alloc[corev1.ResourcePods]
				p.Sub(resource.MustParse("1"))
				alloc[corev1.ResourcePods] = p
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				corev1.LabelTopologyZone: o.Zone, v1.LabelCapacityType: o.CapacityType, v1.LabelNodePool: np.Name,
			}}, Spec: corev1.NodeSpec{Taints: np.Taints}}
			for k, vs := range it.Requirements {
				if len(vs) == 1 {
					node.Labels[k] = vs[0]
				}
			}
			maps.Copy(node.Labels, np.Labels)
			offers = append(offers, offer{it, o, alloc, node})
		}
	}
	nodeCost := func(group []*corev1.Pod) float64 {
		best := math.Inf(1)
		for _, of := range offers {
			ok := true
			used := corev1.ResourceList{}
			anti := 0
			for _, p := range group {
				// Kubernetes' own node affinity and taint checks, not
				// the admits under test: an admits that turned pods away
				// from offerings they may use would raise the bound
				// above the optimum unseen.
				if fits, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(of.node); err != nil || !fits {
					ok = false
				}
				if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), of.node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
					return t.Effect != corev1.TaintEffectPreferNoSchedule
				}, false); untolerated {
					ok = false
				}
				if p.Spec.Affinity != nil {
					anti++
				}
				for name, q := range pods.Requests(p) {
					u := used[name]
					u.Add(q)
					used[name] = u
				}
			}
			if anti > 1 || int64(len(group)) > of.alloc.Pods().Value() {
				ok = false
			}
			for name, u := range used {
				if a := of.alloc[name]; u.Cmp(a) > 0 {
					ok = false
				}
			}
			if ok {
				best = min(best, of.o.Price)
			}
		}
		return best
	}
	var placeable []*corev1.Pod
	for _, p := range s.Pods {
		if !math.IsInf(nodeCost([]*corev1.Pod{p}), 1) {
			placeable = append(placeable, p)
		}
	}
	best := math.Inf(1)
	assign := make([]int, len(placeable))
	var rec func(i, blocks int)
	rec = func(i, blocks int) {
		if i == len(placeable) {
			total := 0.0
			for b := range blocks {
				var group []*corev1.Pod
				for j, a := range assign {
					if a == b {
						group = append(group, placeable[j])
					}
				}
				total += nodeCost(group)
			}
			best = min(best, total)
			return
		}
		for b := 0; b <= blocks; b++ {
			assign[i] = b
			rec(i+1, max(blocks, b+1))
		}
	}
	rec(0, 0)
	return best, len(placeable)
}
