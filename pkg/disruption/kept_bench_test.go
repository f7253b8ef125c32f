package disruption_test

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scenario"
)

// Issue 33 asks whether consolidation can end on existing nodes: a set K
// of the cluster's nodes, each keeping its own pods, that takes every
// other node's pods. Such an end is reached by deletes alone, which
// Validate passes whenever the candidates' pods fit the room left, and
// ten budget-sized deletes hold it. BenchmarkExistingEnd measures how
// cheap such an end can be. Its packer (endModel) is the test's own, not
// the solver: it checks what the scenarios' pods ask for, as
// kube-scheduler checks it when a pod lands (requests, pods per node,
// required anti-affinity, DoNotSchedule topology spread over hostname and
// zone, required zone affinity kept by staying in the pod's zone), so
// that a bad end cannot be blamed on the solver's greedy placement.

// endPod is one pod as the packer sees it.
type endPod struct {
	cpu, mem int64
	// labels are the pod's "key=value" pairs, which anti-affinity and
	// spread selectors count.
	labels []string
	// anti is the pair the pod's required hostname anti-affinity selects.
	anti string
	// hostSpread and zoneSpread are the pairs its DoNotSchedule spread
	// constraints (maxSkew 1) select.
	hostSpread, zoneSpread string
	// zoneAffinity: a required zone affinity, kept by staying in zone.
	zoneAffinity bool
	zone         string
}

// endNode is one node: its allocatable, its own pods, and what it holds
// while a packing runs.
type endNode struct {
	name, zone        string
	price             float64
	cpu, mem, maxPods int64
	own               []*endPod
	usedCPU, usedMem  int64
	pods              int64
	count, antis      map[string]int // label pairs held; anti-affinity pairs held
	received          []*endPod
}

func (n *endNode) clear() {
	n.usedCPU, n.usedMem, n.pods = 0, 0, 0
	n.count, n.antis = map[string]int{}, map[string]int{}
	n.received = nil
}

func (n *endNode) hold(p *endPod) {
	n.usedCPU += p.cpu
	n.usedMem += p.mem
	n.pods++
	for _, l := range p.labels {
		n.count[l]++
	}
	if p.anti != "" {
		n.antis[p.anti]++
	}
}

func (n *endNode) release(p *endPod) {
	n.usedCPU -= p.cpu
	n.usedMem -= p.mem
	n.pods--
	for _, l := range p.labels {
		n.count[l]--
	}
	if p.anti != "" {
		n.antis[p.anti]--
	}
}

// admits is kube-scheduler's filter for p on n, zones aside: resources,
// pods per node, the anti-affinity both ways, and the hostname spread
// (maxSkew 1 against a minimum of 0: these clusters have fewer pods of
// each label than nodes).
func (n *endNode) admits(p *endPod) bool {
	if n.usedCPU+p.cpu > n.cpu || n.usedMem+p.mem > n.mem || n.pods+1 > n.maxPods {
		return false
	}
	if p.anti != "" && n.count[p.anti] > 0 {
		return false
	}
	for _, l := range p.labels {
		if n.antis[l] > 0 {
			return false
		}
	}
	return p.hostSpread == "" || n.count[p.hostSpread] == 0
}

// left is how much room n keeps once p lands, memory counted at the
// catalog's 2 GiB per CPU: the best fit is the smallest.
func (n *endNode) left(p *endPod) int64 {
	return n.cpu - n.usedCPU - p.cpu + (n.mem-n.usedMem-p.mem)*1000/(2<<30)
}

type endModel struct {
	nodes []*endNode
	zones []string
	// zoneCount is, per label pair, the pods holding it in each zone.
	zoneCount map[string]map[string]int
	perCPU    float64 // $/h per CPU (the catalog prices linearly)
	lp        float64
}

func pairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// selects is the one pair a selector of the scenarios matches.
func selects(tb testing.TB, s *metav1.LabelSelector) string {
	tb.Helper()
	if s == nil || len(s.MatchLabels) != 1 || len(s.MatchExpressions) > 0 {
		tb.Fatalf("selector %v: the packer reads one matchLabels pair", s)
	}
	return pairs(s.MatchLabels)[0]
}

func newEndModel(tb testing.TB, c *scenario.Cluster, lp float64) *endModel {
	tb.Helper()
	m := &endModel{lp: lp}
	zones := map[string]bool{}
	for _, it := range c.InstanceTypes {
		if len(it.Offerings) > 0 {
			a := it.Allocatable()
			m.perCPU = it.Offerings[0].Price / float64((a.Cpu().MilliValue()+999)/1000)
			break
		}
	}
	types := map[string]corev1.ResourceList{}
	for _, it := range c.InstanceTypes {
		types[it.Name] = it.Allocatable()
	}
	for _, cn := range c.Nodes {
		a := types[cn.InstanceType]
		n := &endNode{name: cn.Name, zone: cn.Zone, price: cn.Price, cpu: a.Cpu().MilliValue(), mem: a.Memory().Value(), maxPods: a.Pods().Value()}
		for _, pod := range cn.Pods {
			if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) > 0 {
				tb.Fatalf("pod %s: the packer reads one container's requests", pod.Name)
			}
			r := pod.Spec.Containers[0].Resources.Requests
			p := &endPod{cpu: r.Cpu().MilliValue(), mem: r.Memory().Value(), labels: pairs(pod.Labels), zone: cn.Zone}
			if a := pod.Spec.Affinity; a != nil {
				if a.PodAntiAffinity != nil {
					for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
						if t.TopologyKey != corev1.LabelHostname {
							tb.Fatalf("pod %s: anti-affinity over %s", pod.Name, t.TopologyKey)
						}
						p.anti = selects(tb, t.LabelSelector)
					}
				}
				if a.PodAffinity != nil {
					p.zoneAffinity = len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
				}
			}
			for _, t := range pod.Spec.TopologySpreadConstraints {
				if t.MaxSkew != 1 || t.WhenUnsatisfiable != corev1.DoNotSchedule {
					tb.Fatalf("pod %s: a spread the packer does not read", pod.Name)
				}
				switch t.TopologyKey {
				case corev1.LabelHostname:
					p.hostSpread = selects(tb, t.LabelSelector)
				case corev1.LabelTopologyZone:
					p.zoneSpread = selects(tb, t.LabelSelector)
				default:
					tb.Fatalf("pod %s: spread over %s", pod.Name, t.TopologyKey)
				}
			}
			n.own = append(n.own, p)
		}
		m.nodes = append(m.nodes, n)
		zones[cn.Zone] = true
	}
	for z := range zones {
		m.zones = append(m.zones, z)
	}
	sort.Strings(m.zones)
	return m
}

// start puts every node's own pods back on it.
func (m *endModel) start() {
	m.zoneCount = map[string]map[string]int{}
	for _, n := range m.nodes {
		n.clear()
		for _, p := range n.own {
			n.hold(p)
			m.countZone(p, n.zone, 1)
		}
	}
}

func (m *endModel) countZone(p *endPod, zone string, d int) {
	for _, l := range p.labels {
		if m.zoneCount[l] == nil {
			m.zoneCount[l] = map[string]int{}
		}
		m.zoneCount[l][zone] += d
	}
}

// zoneAdmits is the zone part of the filter: the zone spread's skew
// (counted without the pods waiting to land, as kube-scheduler counts
// them) and a zone affinity kept by staying.
func (m *endModel) zoneAdmits(p *endPod, zone string) bool {
	if p.zoneAffinity && zone != p.zone {
		return false
	}
	if p.zoneSpread == "" {
		return true
	}
	lo := int(^uint(0) >> 1)
	for _, z := range m.zones {
		lo = min(lo, m.zoneCount[p.zoneSpread][z])
	}
	return m.zoneCount[p.zoneSpread][zone]+1-lo <= 1
}

// place lands p, best fit, on a node of keep that admits it, or reports
// that none does.
func (m *endModel) place(p *endPod, keep []bool) *endNode {
	var best *endNode
	bestLeft := int64(1) << 62
	admitted := map[string]bool{}
	for _, z := range m.zones {
		admitted[z] = m.zoneAdmits(p, z)
	}
	for i, n := range m.nodes {
		if !keep[i] || !admitted[n.zone] || !n.admits(p) {
			continue
		}
		if l := n.left(p); l < bestLeft {
			best, bestLeft = n, l
		}
	}
	if best != nil {
		best.hold(p)
		best.received = append(best.received, p)
		m.countZone(p, best.zone, 1)
	}
	return best
}

func size(p *endPod) int64 { return max(p.cpu, p.mem*1000/(2<<30)) }

// descend is a delete-only descent without a budget: the nodes, in order,
// each removed when every pod it holds then (its own and those it
// received) lands on the nodes still kept, largest first. It returns the
// nodes kept and their $/h; nothing launches.
func (m *endModel) descend(order []int) ([]bool, float64) {
	m.start()
	keep := make([]bool, len(m.nodes))
	for i := range keep {
		keep[i] = true
	}
	for _, i := range order {
		n := m.nodes[i]
		keep[i] = false
		pods := append(slices.Clone(n.own), n.received...)
		for _, p := range pods {
			m.countZone(p, n.zone, -1)
		}
		sort.SliceStable(pods, func(a, b int) bool { return size(pods[a]) > size(pods[b]) })
		var landed []*endNode
		for _, p := range pods {
			to := m.place(p, keep)
			if to == nil {
				break
			}
			landed = append(landed, to)
		}
		if len(landed) == len(pods) {
			continue
		}
		for j, to := range landed {
			to.release(pods[j])
			to.received = to.received[:len(to.received)-1]
			m.countZone(pods[j], to.zone, -1)
		}
		for _, p := range pods {
			m.countZone(p, n.zone, 1)
		}
		keep[i] = true
	}
	cost := 0.0
	for i, n := range m.nodes {
		if keep[i] {
			cost += n.price
		}
	}
	return keep, cost
}

// repack is the end that keeps the nodes of keep with their own pods and
// lands every other node's pods on them, largest first, best fit; the
// pods that land nowhere go, first fit, to new nodes of at most 16 CPU,
// each priced as the smallest type that holds it (k+1 CPU for k+0.9
// allocatable and 2 GiB per CPU less 10 MiB, as the catalog has them).
func (m *endModel) repack(keep []bool) (cost float64, launched, onNew int) {
	m.start()
	var moving []*endPod
	for i, n := range m.nodes {
		if keep[i] {
			cost += n.price
			continue
		}
		moving = append(moving, n.own...)
		for _, p := range n.own {
			m.countZone(p, n.zone, -1)
		}
	}
	sort.SliceStable(moving, func(a, b int) bool { return size(moving[a]) > size(moving[b]) })
	var bins []*endNode
	for _, p := range moving {
		if m.place(p, keep) != nil {
			continue
		}
		onNew++
		var to *endNode
		for _, b := range bins {
			if b.admits(p) {
				to = b
				break
			}
		}
		if to == nil {
			to = &endNode{cpu: 15900, mem: 16*(2<<30) - 16*(10<<20), maxPods: 160}
			to.clear()
			bins = append(bins, to)
		}
		to.hold(p)
	}
	for _, b := range bins {
		k := int64(0)
		for k*1000+900 < b.usedCPU || (k+1)*(2<<30)-(10<<20) < b.usedMem {
			k++
		}
		cost += float64(k+1) * m.perCPU
	}
	return cost, len(bins), onNew
}

// search improves keep by local search on repack's cost: a kept node
// among those left with the most room is dropped, swapped for a removed
// node of its zone that is smaller but holds about what it holds, or (when
// pods went to new nodes) joined by a removed node of its zone; first
// improvement, evals repacks at most.
func (m *endModel) search(keep []bool, evals int, rng *rand.Rand) ([]bool, float64) {
	cur := slices.Clone(keep)
	best, _, onNew := m.repack(cur)
	byZone := map[string][]int{}
	for i, n := range m.nodes {
		byZone[n.zone] = append(byZone[n.zone], i)
	}
	roomiest := func() []int {
		var ks []int
		for i := range m.nodes {
			if cur[i] {
				ks = append(ks, i)
			}
		}
		sort.SliceStable(ks, func(a, b int) bool {
			x, y := m.nodes[ks[a]], m.nodes[ks[b]]
			return x.cpu-x.usedCPU > y.cpu-y.usedCPU
		})
		return ks
	}
	ranked := roomiest()
	for range evals {
		try := slices.Clone(cur)
		i := ranked[rng.IntN(min(60, len(ranked)))]
		n := m.nodes[i]
		switch r := rng.Float64(); {
		case r < 0.25:
			try[i] = false
		case r < 0.35 && onNew > 0:
			z := byZone[n.zone]
			try[z[rng.IntN(len(z))]] = true
		default:
			var smaller []int
			for _, j := range byZone[n.zone] {
				if !cur[j] && m.nodes[j].cpu < n.cpu && m.nodes[j].cpu >= n.usedCPU-1000 {
					smaller = append(smaller, j)
				}
			}
			try[i] = false
			if len(smaller) > 0 {
				try[smaller[rng.IntN(len(smaller))]] = true
			}
		}
		if c, _, o := m.repack(try); c < best {
			best, cur, onNew = c, try, o
		}
		m.repack(cur)
		ranked = roomiest()
	}
	return cur, best
}

// BenchmarkExistingEnd measures, on each consolidation cluster, the
// cheapest end made of existing nodes that the packer above finds: a
// delete-only descent in four orders (the one that removes the largest
// nodes first wins on every cluster), the engine's own solver landing the
// removed nodes' pods on the same kept set (disruption.KeptEnd, which may
// launch), the same kept set repacked by the packer from the nodes' own
// pods (largest first, as a plan made at once would land them, not in the
// descent's order), and a local search from there over which nodes stay
// (launches allowed, priced). It also counts the budget-sized deletes
// that would reach the best descent's end (⌈N/10⌉ each).
func BenchmarkExistingEnd(b *testing.B) {
	evals := map[string]int{"diverse-1000": 1500, "diverse-5000": 300, "diverse-10000": 200}
	for _, name := range benchClusters {
		b.Run(name, func(b *testing.B) {
			var descent, solver, repacked, searched, room float64
			var kept, launched, deletes int
			for b.Loop() {
				c := loadCluster(b, name)
				lp := bound(b, c)
				m := newEndModel(b, c, lp)
				orders := []struct {
					name string
					less func(x, y *endNode) bool
				}{
					{"largest first", func(x, y *endNode) bool { return x.cpu > y.cpu }},
					{"largest first, emptiest first among equals", func(x, y *endNode) bool {
						return x.cpu > y.cpu || x.cpu == y.cpu && x.usedCPU < y.usedCPU
					}},
					{"largest first, fullest first among equals", func(x, y *endNode) bool {
						return x.cpu > y.cpu || x.cpu == y.cpu && x.usedCPU > y.usedCPU
					}},
					{"most room first", func(x, y *endNode) bool { return x.cpu-x.usedCPU > y.cpu-y.usedCPU }},
				}
				var bestOrder []int
				var bestKeep []bool
				descent = 0
				for _, o := range orders {
					m.start()
					order := make([]int, len(m.nodes))
					for i := range order {
						order[i] = i
					}
					sort.SliceStable(order, func(a, b int) bool { return o.less(m.nodes[order[a]], m.nodes[order[b]]) })
					keep, cost := m.descend(order)
					n := 0
					for _, k := range keep {
						if k {
							n++
						}
					}
					if testing.Verbose() {
						b.Logf("%s: delete-only descent, %s: %d nodes kept, %.4f× the bound", name, o.name, n, cost/lp)
					}
					if descent == 0 || cost/lp < descent {
						descent, bestKeep, bestOrder, kept = cost/lp, keep, order, n
					}
				}
				// The best descent's end again, for the room it leaves.
				m.descend(bestOrder)
				var roomCPU, roomMem, podsCPU int64
				for i, n := range m.nodes {
					if bestKeep[i] {
						roomCPU += n.cpu - n.usedCPU
						roomMem += n.mem - n.usedMem
						podsCPU += n.usedCPU
					}
				}
				room = float64(roomCPU) / float64(podsCPU)
				if testing.Verbose() {
					b.Logf("%s: the best descent's kept nodes have %.1f CPU and %.0f GiB unused, %.1f%% of their pods' CPU", name, float64(roomCPU)/1000, float64(roomMem)/(1<<30), 100*room)
				}
				names := map[string]bool{}
				for i, n := range m.nodes {
					if bestKeep[i] {
						names[n.name] = true
					}
				}
				cost, l, unschedulable, err := disruption.KeptEnd(c.Input(benchNow, disruption.Options{}), names)
				if err != nil {
					b.Fatal(err)
				}
				if unschedulable > 0 {
					b.Fatalf("%s: the solver leaves %d pods unschedulable", name, unschedulable)
				}
				solver, launched = cost/lp, l
				r, _, _ := m.repack(bestKeep)
				repacked = r / lp
				_, s := m.search(bestKeep, evals[name], rand.New(rand.NewPCG(3, 4)))
				searched = s / lp
				deletes = 0
				for n := len(m.nodes); n > kept; n -= (n + 9) / 10 {
					deletes++
				}
				if testing.Verbose() {
					b.Logf("%s: best descent keeps %d of %d nodes at %.4f× the bound (%d budget-sized deletes); the solver on that kept set %.4f× (%d launched); repacked %.4f×, searched from it %.4f×", name, kept, len(m.nodes), descent, deletes, solver, launched, repacked, searched)
				}
			}
			b.ReportMetric(descent, "descent-end/LP")
			b.ReportMetric(float64(kept), "kept")
			b.ReportMetric(room, "room/pods-cpu")
			b.ReportMetric(float64(deletes), "deletes")
			b.ReportMetric(solver, "solver-end/LP")
			b.ReportMetric(float64(launched), "solver-launched")
			b.ReportMetric(repacked, "repacked-end/LP")
			b.ReportMetric(searched, "searched-end/LP")
		})
	}
}
