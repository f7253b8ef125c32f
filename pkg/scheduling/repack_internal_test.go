package scheduling

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRepackResplitsTwoNodes lays pods out on two planned nodes by hand,
// one node sized by memory with its CPU idle and one sized by CPU with its
// memory idle, and holds repack to the cheapest split its rules allow: a
// node's pods owning required hostname anti-affinity stay put, and no pod
// lands beside a pod its own or the other's anti-affinity refuses.
func TestRepackResplitsTwoNodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// antiCPU gives the memory-heavy pods a required hostname
		// anti-affinity against the CPU-heavy ones.
		antiCPU bool
		// hostSpread gives the memory-heavy pods a hostname spread
		// (maxSkew 1) over the CPU-heavy ones instead.
		hostSpread bool
		before     float64
		after      float64
	}{
		// By hand: the memory node (anchor and two 3.5 GiB pods, 7.1 GiB)
		// and the cpu node (anchor and two 1.5 cpu pods, 3.1 cpu) are
		// 4-cpu types. One of each per node is 1.7 cpu and 3.6 GiB: two
		// 2-cpu types.
		{name: "free pods are resplit", before: 0.8, after: 0.4},
		{name: "anti-affinity keeps its owners apart", antiCPU: true, before: 0.8, after: 0.8},
		{name: "hostname spread allows one per node", hostSpread: true, before: 0.8, after: 0.4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			anchor := func(name string) *corev1.Pod {
				p := repackPod(name, "100m", "100Mi", map[string]string{"app": "anchor"})
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}},
						TopologyKey:   corev1.LabelHostname,
					}},
				}}
				return p
			}
			mem := func(name string) *corev1.Pod {
				p := repackPod(name, "100m", "3584Mi", map[string]string{"app": "mem"})
				term := corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cpu"}},
					TopologyKey:   corev1.LabelHostname,
				}
				if tc.antiCPU {
					p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term},
					}}
				}
				if tc.hostSpread {
					p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: term.LabelSelector,
					}}
				}
				return p
			}
			cpu := func(name string) *corev1.Pod {
				return repackPod(name, "1500m", "100Mi", map[string]string{"app": "cpu"})
			}
			a1, a2 := anchor("a1"), anchor("a2")
			m1, m2 := mem("m1"), mem("m2")
			c1, c2 := cpu("c1"), cpu("c2")
			snap := &Snapshot{
				NodePools:     []*NodePool{{Name: "default"}},
				InstanceTypes: map[string][]*InstanceType{"default": repackCatalog()},
				Pods:          []*corev1.Pod{a1, a2, m1, m2, c1, c2},
			}
			sv, err := newSolver(snap, Options{MaxInstanceTypes: DefaultMaxInstanceTypes})
			if err != nil {
				t.Fatal(err)
			}
			memNode := placeByHand(t, sv, nil, a1, m1, m2)
			cpuNode := placeByHand(t, sv, nil, a2, c1, c2)
			if got := sv.cost(); math.Abs(got-tc.before) > 1e-9 {
				t.Fatalf("hand-made plan costs %.2f, want %.2f", got, tc.before)
			}
			sv.repack()
			if got := sv.cost(); math.Abs(got-tc.after) > 1e-9 {
				t.Errorf("after repack the plan costs %.2f, want %.2f (%s | %s)", got, tc.after, podNames(memNode), podNames(cpuNode))
			}
			for _, n := range []*nodeState{memNode, cpuNode} {
				apps := map[string]int{}
				for _, p := range n.pods {
					apps[p.Labels["app"]]++
				}
				if apps["anchor"] != 1 {
					t.Errorf("node %s holds %d anchors, want 1", podNames(n), apps["anchor"])
				}
				if tc.antiCPU && apps["mem"] > 0 && apps["cpu"] > 0 {
					t.Errorf("node %s holds a memory pod beside a cpu pod its anti-affinity refuses", podNames(n))
				}
				if tc.hostSpread && apps["mem"] > 0 && apps["cpu"] > 1 {
					t.Errorf("node %s holds %d cpu pods beside a memory pod spreading them 1 per node", podNames(n), apps["cpu"])
				}
				checkBooks(t, n)
			}
			plan := sv.plan()
			if len(plan.NewNodeClaims) != 2 {
				t.Errorf("plan has %d nodes, want 2", len(plan.NewNodeClaims))
			}
		})
	}
}

// TestRepackResplitsThreeNodes holds repack to a saving only three nodes
// together can make: each carries an anchor (0.1 cpu, anti-affinity to
// the others) and five 0.3-cpu pods, 1.6 cpu on a 2-cpu type. No two of
// them fit a 2-cpu and a 1-cpu type (ten pods, room for nine), all three
// fit 2 + 2 + 1 cpu.
func TestRepackResplitsThreeNodes(t *testing.T) {
	var all []*corev1.Pod
	var byNode [3][]*corev1.Pod
	for i := range byNode {
		a := repackPod(fmt.Sprintf("anchor-%d", i), "100m", "100Mi", map[string]string{"app": "anchor"})
		a.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
		byNode[i] = append(byNode[i], a)
		for j := 0; j < 5; j++ {
			byNode[i] = append(byNode[i], repackPod(fmt.Sprintf("web-%d-%d", i, j), "300m", "100Mi", map[string]string{"app": "web"}))
		}
		all = append(all, byNode[i]...)
	}
	snap := &Snapshot{
		NodePools:     []*NodePool{{Name: "default"}},
		InstanceTypes: map[string][]*InstanceType{"default": repackCatalog()},
		Pods:          all,
	}
	sv, err := newSolver(snap, Options{MaxInstanceTypes: DefaultMaxInstanceTypes})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*nodeState
	for i := range byNode {
		nodes = append(nodes, placeByHand(t, sv, nil, byNode[i]...))
	}
	var rp repacker
	for _, pair := range [][]*nodeState{{nodes[0], nodes[1]}, {nodes[0], nodes[2]}, {nodes[1], nodes[2]}} {
		if _, ok := sv.repackNodes(pair, &rp, repackTripleSteps); ok {
			t.Fatalf("a pair was re-split cheaper: %s | %s", podNames(pair[0]), podNames(pair[1]))
		}
	}
	if got := sv.cost(); math.Abs(got-0.6) > 1e-9 {
		t.Fatalf("after the pairs the plan costs %.2f, want 0.60 as placed", got)
	}
	sv.repack()
	if got := sv.cost(); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("after repack the plan costs %.2f, want 0.50 (%s | %s | %s)", got, podNames(nodes[0]), podNames(nodes[1]), podNames(nodes[2]))
	}
	for _, n := range nodes {
		anchors := 0
		for _, p := range n.pods {
			if p.Labels["app"] == "anchor" {
				anchors++
			}
		}
		if anchors != 1 || !n.requests.fits(n.pool.effAlloc[n.natural]) {
			t.Errorf("node %s: %d anchors, requests %v on %s", podNames(n), anchors, n.requests, n.pool.types[n.natural].it.Name)
		}
	}
}

func repackPod(name, cpu, mem string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
		}}}}},
	}
}

// repackCatalog is 1 to 8 cpu types with 2 GiB per cpu, nothing reserved,
// at 0.1 $/h per cpu, on-demand in one zone.
func repackCatalog() []*InstanceType {
	var its []*InstanceType
	for k := int64(1); k <= 8; k++ {
		name := fmt.Sprintf("t-%d", k)
		its = append(its, &InstanceType{
			Name: name,
			Requirements: map[string][]string{
				corev1.LabelInstanceTypeStable: {name},
				corev1.LabelArchStable:         {"amd64"},
				corev1.LabelOSStable:           {"linux"},
				corev1.LabelTopologyZone:       {"zone-a"},
				"karpenter.sh/capacity-type":   {"on-demand"},
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(k, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(k*2<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(k*10, resource.DecimalSI),
			},
			Offerings: []Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: float64(k) * 0.1, Available: true}},
		})
	}
	return its
}

// placeByHand puts the pods on one new planned node (opened for the first,
// grown for the rest), each checked as the solver checks a placement.
func placeByHand(t *testing.T, sv *solver, n *nodeState, pods ...*corev1.Pod) *nodeState {
	t.Helper()
	for _, p := range pods {
		var cb *classBase
		for _, c := range sv.classes {
			for _, q := range c.pods {
				if q == p {
					cb = c
				}
			}
		}
		if cb == nil {
			t.Fatalf("pod %s has no class", p.Name)
		}
		c := sv.variant(cb, 0)
		a := sv.newAttempt(c)
		if n == nil {
			var tr trial
			var ok bool
			if n, tr, ok = sv.openNode(a, sv.pools[0]); !ok {
				t.Fatalf("no node opens for %s", p.Name)
			}
			n.idx = len(sv.newNodes)
			sv.newNodes = append(sv.newNodes, n)
			sv.lists[0] = append(sv.lists[0], n)
			sv.commitNew(c, n, tr, p)
			continue
		}
		tr, v := sv.newNodeFit(a, n, true)
		if v != fits {
			t.Fatalf("%s does not fit the node by hand", p.Name)
		}
		sv.commitNew(c, n, tr, p)
	}
	sv.shrink(n)
	return n
}

func podNames(n *nodeState) string {
	s := ""
	for _, p := range n.pods {
		s += p.Name + " "
	}
	return s
}

// anchorPod is a pod that needs a node of its own (required hostname
// anti-affinity to every anchor), so a hand-made plan keeps one per node.
func anchorPod(name, mem string) *corev1.Pod {
	p := repackPod(name, "100m", mem, map[string]string{"app": "anchor"})
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	return p
}

// twoNodesByHand solves nothing: it lays out, on one NodePool of
// catalog's types, reservoir's pods on one planned node and other's on
// another, as the local searches' tests start from.
func twoNodesByHand(t *testing.T, catalog []*InstanceType, reservoir, other []*corev1.Pod) (*solver, *nodeState, *nodeState) {
	t.Helper()
	snap := &Snapshot{
		NodePools:     []*NodePool{{Name: "default"}},
		InstanceTypes: map[string][]*InstanceType{"default": catalog},
		Pods:          append(append([]*corev1.Pod(nil), reservoir...), other...),
	}
	sv, err := newSolver(snap, Options{MaxInstanceTypes: DefaultMaxInstanceTypes})
	if err != nil {
		t.Fatal(err)
	}
	return sv, placeByHand(t, sv, nil, reservoir...), placeByHand(t, sv, nil, other...)
}

// checkBooks fails the test when planned node n's requests are not the
// sum of its pods' or overcommit its type.
func checkBooks(t *testing.T, n *nodeState) {
	t.Helper()
	sum := make(resVec, len(n.requests))
	for _, c := range n.podClasses {
		sum.add(c.base.req)
	}
	for i := range sum {
		if sum[i] != n.requests[i] {
			t.Errorf("node %s requests %v, its pods sum to %v", podNames(n), n.requests, sum)
			break
		}
	}
	if !n.requests.fits(n.pool.effAlloc[n.natural]) {
		t.Errorf("node %s overcommits its type %s", podNames(n), n.pool.types[n.natural].it.Name)
	}
}
