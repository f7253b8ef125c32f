package lowerbound

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
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

// existingNode is an initialised node in zone with 4 cpu, 16Gi and 10
// pods free.
func existingNode(name, zone string, taints ...corev1.Taint) *scheduling.ExistingNode {
	return &scheduling.ExistingNode{Name: name, Initialized: true, Taints: taints,
		Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods: resource.MustParse("10")}}
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
		nodes  []*scheduling.ExistingNode
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
		{
			// Room for both on each node, but one is tainted and the
			// other in the wrong zone: neither takes a pod.
			name:  "existing nodes the pods may not use",
			types: []*scheduling.InstanceType{instanceType("small", "2", "8Gi", 10, od("a", 1))},
			pods:  []*corev1.Pod{inZone(pod("a", "1", "1Gi"), "a"), inZone(pod("b", "1", "1Gi"), "a")},
			nodes: []*scheduling.ExistingNode{
				existingNode("tainted", "a", corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}),
				existingNode("elsewhere", "b"),
			},
			lp:     0,
			config: 1,
		},
		{
			name:   "an existing node takes what it may",
			types:  []*scheduling.InstanceType{instanceType("small", "2", "8Gi", 10, od("a", 1))},
			pods:   []*corev1.Pod{inZone(pod("a", "1", "1Gi"), "a"), pod("b", "1", "1Gi"), pod("c", "1", "1Gi"), pod("d", "1", "1Gi")},
			nodes:  []*scheduling.ExistingNode{existingNode("elsewhere", "b")},
			lp:     0,
			config: 1, // b, c, d on the existing node would leave a: one node
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{{Name: "p"}}, Pods: tc.pods, Nodes: tc.nodes,
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
// optimum, found by trying every way to put a few pods on existing nodes
// and new ones, on random small instances with one or two NodePools (some
// tainted, some pods tolerating), zones, capacity types, node selectors,
// anti-affinity, a DaemonSet, burstable types and volumes under billed or
// list prices, and existing nodes (some tainted or marked for deletion);
// and, without existing nodes, with the resource LP, which it must never
// fall below. The oracle decides admission with Kubernetes' own node
// affinity and taint matching and prices nodes from the catalog's facts,
// never with the code under test.
func TestConfigurationsNeverAboveOptimum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 33))
	for i := range 200 {
		s, opts := randomSnapshot(r)
		opt, placeable := bruteOptimum(s, opts.ListPrices)
		got, err := Configurations(s, opts, ConfigLimits{})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got.Unplaceable != len(s.Pods)-placeable {
			t.Errorf("case %d: %d unplaceable, want %d", i, got.Unplaceable, len(s.Pods)-placeable)
		}
		if got.Value > opt+1e-6 {
			t.Fatalf("case %d: bound %v above the optimum %v", i, got.Value, opt)
		}
		if placeable == len(s.Pods) && len(s.Pods) > 0 && len(s.Nodes) == 0 {
			lp, err := Compute(s, opts)
			if err == nil && got.Converged && got.Value < lp.LP-1e-6 {
				t.Errorf("case %d: converged bound %v below the resource LP %v", i, got.Value, lp.LP)
			}
		}
		if !got.Converged && !paysCredits(s, opts) {
			t.Errorf("case %d: did not converge in %d iterations: bound %v, master %v, optimum %v", i, got.Iterations, got.Value, got.LP, opt)
		}
	}
}

// paysCredits reports whether some node of s may pay surplus credits, where
// the bound's pricing is a relaxation that need not prove convergence.
func paysCredits(s *scheduling.Snapshot, opts scheduling.Options) bool {
	for _, its := range s.InstanceTypes {
		for _, it := range its {
			if it.Burst != nil && !opts.ListPrices {
				return true
			}
		}
	}
	return false
}

// randomSnapshot is one random instance of TestConfigurationsNeverAboveOptimum.
func randomSnapshot(r *rand.Rand) (*scheduling.Snapshot, scheduling.Options) {
	zones := []string{"a", "b"}
	cts := []string{"on-demand", "spot"}
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}
	taints := func() []corev1.Taint {
		if r.IntN(2) == 0 {
			return nil
		}
		return []corev1.Taint{{Key: "dedicated", Value: []string{"a", "b"}[r.IntN(2)], Effect: effects[r.IntN(3)]}}
	}
	s := &scheduling.Snapshot{InstanceTypes: map[string][]*scheduling.InstanceType{}}
	for _, name := range []string{"p", "q"}[:1+r.IntN(2)] {
		np := &scheduling.NodePool{Name: name, Labels: map[string]string{"team": name}, Taints: taints()}
		s.NodePools = append(s.NodePools, np)
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
			it := instanceType(fmt.Sprintf("%s%d", name, ti), fmt.Sprint(cpu), fmt.Sprintf("%dGi", 2*cpu+r.IntN(3)), int64(2+r.IntN(4)), offs...)
			it.Overhead.KubeReserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
			it.VolumePrice = 0.02 * float64(r.IntN(3))
			if r.IntN(3) == 0 {
				// Cheap by list price, dear in credits above 10-40 % of
				// its CPU.
				for o := range it.Offerings {
					it.Offerings[o].Price /= 3
				}
				burstable(it, int64(cpu*100*(1+r.IntN(4))), 0.1+0.6*r.Float64())
			}
			s.InstanceTypes[name] = append(s.InstanceTypes[name], it)
		}
	}
	tolerate := func(p *corev1.Pod) {
		switch r.IntN(4) {
		case 0:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		case 1:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
		case 2:
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "b"}}
		}
	}
	for pi := range 1 + r.IntN(6) {
		p := pod(fmt.Sprintf("p%d", pi), fmt.Sprintf("%dm", 250*(1+r.IntN(6))), fmt.Sprintf("%dMi", 512*(1+r.IntN(6))))
		switch r.IntN(6) {
		case 0:
			p = antiPod(p, "w")
		case 1:
			p = inZone(p, zones[r.IntN(2)])
		case 2:
			p.Spec.NodeSelector = map[string]string{v1.LabelCapacityType: cts[r.IntN(2)]}
		case 3:
			p.Spec.NodeSelector = map[string]string{"team": "q"}
		}
		tolerate(p)
		s.Pods = append(s.Pods, p)
	}
	if r.IntN(3) == 0 {
		ds := pod("ds", "100m", "128Mi")
		if r.IntN(2) == 0 {
			ds.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}
		s.DaemonSets = append(s.DaemonSets, ds)
	}
	for ni := range r.IntN(3) {
		name := fmt.Sprintf("n%d", ni)
		n := &scheduling.ExistingNode{Name: name, NodePool: "p", Initialized: true, Taints: taints(), MarkedForDeletion: r.IntN(5) == 0,
			Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zones[r.IntN(2)], v1.LabelCapacityType: cts[r.IntN(2)], v1.LabelNodePool: "p", "team": "p"},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(fmt.Sprint(1 + r.IntN(3))),
				corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 2+r.IntN(4))),
				corev1.ResourcePods:   *resource.NewQuantity(int64(2+r.IntN(3)), resource.DecimalSI),
			}}
		for ei := range r.IntN(3) {
			n.Pods = append(n.Pods, pod(fmt.Sprintf("%s-%d", name, ei), fmt.Sprintf("%dm", 250*(1+r.IntN(4))), fmt.Sprintf("%dMi", 512*(1+r.IntN(3)))))
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s, scheduling.Options{ListPrices: r.IntN(4) == 0}
}

// bruteOptimum is the cheapest way to place the pods that fit some new
// node alone, by trying every way to split them among the existing nodes
// (free) and new nodes, and how many those are. A new node is priced from
// the catalog's facts: its offering's list price, plus (unless listPrices)
// its volumes and the surplus credits of a burstable type for its pods'
// and DaemonSet pods' CPU above the baseline.
func bruteOptimum(s *scheduling.Snapshot, listPrices bool) (float64, int) {
	type host struct {
		node  *corev1.Node // for the pods' own checks
		free  corev1.ResourceList
		price func(cpuMilli int64) float64 // nil: an existing node, free
		cpu   int64                        // DaemonSet pods' CPU
	}
	var news, existing []host
	for _, np := range s.NodePools {
		for _, it := range s.InstanceTypes[np.Name] {
			for _, o := range it.Offerings {
				if !o.Available {
					continue
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
				h := host{node: node, free: it.Allocatable()}
				for _, d := range s.DaemonSets {
					if admitted(d, node) {
						take(h.free, d)
						h.cpu += milliCPU(d)
					}
				}
				list, volumes, burst := o.Price, it.VolumePrice, it.Burst
				h.price = func(cpuMilli int64) float64 {
					if listPrices {
						return list
					}
					price := list + volumes
					if burst != nil && cpuMilli > burst.BaselineMilliCPU {
						price += float64(cpuMilli-burst.BaselineMilliCPU) / 1000 * burst.SurplusPerVCPUHour
					}
					return price
				}
				news = append(news, h)
			}
		}
	}
	for _, n := range s.Nodes {
		if n.MarkedForDeletion {
			continue
		}
		h := host{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: n.Labels}, Spec: corev1.NodeSpec{Taints: n.Taints}}, free: n.Allocatable.DeepCopy()}
		for _, p := range n.Pods {
			take(h.free, p)
		}
		existing = append(existing, h)
	}
	// hold is what host h costs holding group, +Inf when it cannot: the
	// pods' node affinity and tolerations, one anti-affinity member, and
	// their requests within what is free.
	hold := func(h host, group []*corev1.Pod) float64 {
		if len(group) == 0 && h.price == nil {
			return 0
		}
		free := h.free.DeepCopy()
		cpu, anti := h.cpu, 0
		for _, p := range group {
			if !admitted(p, h.node) {
				return math.Inf(1)
			}
			if p.Spec.Affinity != nil {
				anti++
			}
			take(free, p)
			cpu += milliCPU(p)
		}
		if anti > 1 {
			return math.Inf(1)
		}
		for _, q := range free {
			if q.Sign() < 0 {
				return math.Inf(1)
			}
		}
		if h.price == nil {
			return 0
		}
		return h.price(cpu)
	}
	var placeable []*corev1.Pod
	for _, p := range s.Pods {
		if slices.ContainsFunc(news, func(h host) bool { return !math.IsInf(hold(h, []*corev1.Pod{p}), 1) }) {
			placeable = append(placeable, p)
		}
	}
	n := len(placeable)
	group := func(mask int) []*corev1.Pod {
		var g []*corev1.Pod
		for j, p := range placeable {
			if mask&(1<<j) != 0 {
				g = append(g, p)
			}
		}
		return g
	}
	// single[m] is the cheapest new node holding the pods of mask m;
	// split[m] the cheapest set of new nodes holding them.
	full := 1<<n - 1
	single, split := make([]float64, full+1), make([]float64, full+1)
	for m := 1; m <= full; m++ {
		single[m] = math.Inf(1)
		for _, h := range news {
			single[m] = min(single[m], hold(h, group(m)))
		}
	}
	for m := 1; m <= full; m++ {
		low := m & -m
		split[m] = math.Inf(1)
		for sub := m; sub > 0; sub = (sub - 1) & m {
			if sub&low != 0 {
				split[m] = min(split[m], single[sub]+split[m^sub])
			}
		}
	}
	// Each existing node takes some of what is left, or nothing.
	best := math.Inf(1)
	var onExisting func(e, left int)
	onExisting = func(e, left int) {
		if e == len(existing) {
			best = min(best, split[left])
			return
		}
		for sub := left; ; sub = (sub - 1) & left {
			if hold(existing[e], group(sub)) == 0 {
				onExisting(e+1, left^sub)
			}
			if sub == 0 {
				break
			}
		}
	}
	onExisting(0, full)
	return best, n
}

// admitted reports whether p may run on node by Kubernetes' own node
// affinity and taint matching (PreferNoSchedule never keeps a pod off), not
// the admits under test: an admits that turned pods away from offerings
// they may use would raise the bound above the optimum unseen.
func admitted(p *corev1.Pod, node *corev1.Node) bool {
	if fits, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node); err != nil || !fits {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect != corev1.TaintEffectPreferNoSchedule
	}, false)
	return !untolerated
}

// take subtracts p's requests and its pod slot from free.
func take(free corev1.ResourceList, p *corev1.Pod) {
	for name, q := range pods.Requests(p) {
		f := free[name]
		f.Sub(q)
		free[name] = f
	}
	f := free[corev1.ResourcePods]
	f.Sub(resource.MustParse("1"))
	free[corev1.ResourcePods] = f
}

func milliCPU(p *corev1.Pod) int64 {
	q := pods.Requests(p)[corev1.ResourceCPU]
	return q.MilliValue()
}

// TestPrimalMasterMatchesDual holds the master's two solvers to each
// other: on random instances (existing nodes included), the generation
// with the warm-started primal simplex and the one through gonum's
// simplex on the dual converge to the same configuration LP.
func TestPrimalMasterMatchesDual(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 33))
	defer func(v int) { maxPrimalRooms = v }(maxPrimalRooms)
	compared := 0
	for i := range 120 {
		s, opts := randomSnapshot(r)
		maxPrimalRooms = 64
		primal, err := Configurations(s, opts, ConfigLimits{})
		if err != nil {
			t.Fatalf("case %d, primal: %v", i, err)
		}
		maxPrimalRooms = -1
		dual, err := Configurations(s, opts, ConfigLimits{})
		if err != nil {
			t.Fatalf("case %d, dual: %v", i, err)
		}
		if !primal.Converged || !dual.Converged {
			continue
		}
		compared++
		if math.Abs(primal.LP-dual.LP) > 1e-6*max(1, dual.LP) || math.Abs(primal.Value-dual.Value) > 1e-3*max(1, dual.Value) {
			t.Errorf("case %d: primal LP %v bound %v, dual LP %v bound %v", i, primal.LP, primal.Value, dual.LP, dual.Value)
		}
	}
	if compared < 60 {
		t.Fatalf("only %d cases converged both ways", compared)
	}
}
