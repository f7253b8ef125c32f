package lowerbound

import (
	"fmt"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Bound is the LP lower bound on the hourly cost of a Snapshot's new nodes.
type Bound struct {
	// LP is the cost of the fractional cover of the pods' requests, $/hour.
	LP float64
	// LPAnti adds Σx ≥ DistinctNodes to LP's program, $/hour.
	LPAnti float64
	// DistinctNodes is the largest group of pending pods that must sit on
	// pairwise distinct nodes (required hostname anti-affinity among them),
	// less the existing nodes that could each take one.
	DistinctNodes int
	// Demand is what the new nodes must cover: the pending pods' summed
	// requests (with a "pods" entry for their count), less the free capacity
	// of existing nodes.
	Demand corev1.ResourceList
	// Nodes is the fractional node count of the LP solution (Σx).
	Nodes float64
}

// column is one instance type in the program.
type column struct {
	name  string
	price float64
	alloc []float64 // per demanded resource, in the demand's units
}

// Compute solves the LP lower bound for the Snapshot's pending pods. Pods
// owned by a DaemonSet are left out (the autoscaler does not provision for
// them), and so is DaemonSet overhead, which only makes the bound looser.
// Each instance type counts at its cheapest available offering that its
// NodePool's requirements allow; types the NodePool excludes are left out.
// Prices follow opts.ListPrices as the solver's do: under billed prices a
// type's column adds its volumes, and a burstable type has two columns,
// one with its CPU cut to the baseline at its price, one with all its CPU
// at its price plus the credits for all of it above the baseline. A node
// using CPU r between the two is exactly their blend (credits are linear
// there), so the program still bounds every plan from below.
func Compute(s *scheduling.Snapshot, opts scheduling.Options) (Bound, error) {
	demand := podDemand(s)
	subtractExistingFree(demand, s.Nodes)
	b := Bound{Demand: demand, DistinctNodes: max(0, distinctNodes(s.Pods)-usableNodes(s.Nodes))}

	names := make([]corev1.ResourceName, 0, len(demand))
	for name, q := range demand {
		if q.Sign() > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return b, nil
	}
	want := make([]float64, len(names))
	for i, name := range names {
		want[i] = quantityValue(name, demand[name])
	}
	cols := columns(s, names, opts.ListPrices)
	for i, name := range names {
		if !slices.ContainsFunc(cols, func(c column) bool { return c.alloc[i] > 0 }) {
			return b, fmt.Errorf("computing the LP bound: no available instance type has allocatable %s", name)
		}
	}
	var err error
	if b.LP, b.Nodes, err = solve(cols, want, 0); err != nil {
		return b, fmt.Errorf("computing the LP bound: %w", err)
	}
	b.LPAnti = b.LP
	if float64(b.DistinctNodes) > b.Nodes+1e-9 {
		if b.LPAnti, _, err = solve(cols, want, b.DistinctNodes); err != nil {
			return b, fmt.Errorf("computing the LP+anti bound: %w", err)
		}
	}
	return b, nil
}

// solve minimises Σ price·x subject to Σ alloc·x ≥ want per resource and,
// when minNodes > 0, Σ x ≥ minNodes. Rows are scaled so each right-hand side
// is 1, which keeps cores, bytes and pod counts on one footing.
func solve(cols []column, want []float64, minNodes int) (cost, nodes float64, err error) {
	rows := len(want)
	if minNodes > 0 {
		rows++
	}
	n := len(cols)
	// Standard form: [A | -I] [x; s] = 1, x, s ≥ 0.
	a := mat.NewDense(rows, n+rows, nil)
	c := make([]float64, n+rows)
	b := make([]float64, rows)
	for j, col := range cols {
		c[j] = col.price
		for i := range want {
			a.Set(i, j, col.alloc[i]/want[i])
		}
		if minNodes > 0 {
			a.Set(rows-1, j, 1/float64(minNodes))
		}
	}
	for i := range rows {
		a.Set(i, n+i, -1)
		b[i] = 1
	}
	cost, x, err := lp.Simplex(c, a, b, 1e-10, nil)
	if err != nil {
		return 0, 0, err
	}
	for j := range cols {
		nodes += x[j]
	}
	return cost, nodes, nil
}

// columns lists every instance type any NodePool may launch, once, at the
// cheapest offering any of those NodePools allows, dropping types that
// offer none of the demanded resources or have no available offering.
func columns(s *scheduling.Snapshot, names []corev1.ResourceName, listPrices bool) []column {
	best := map[string]*scheduling.InstanceType{}
	price := map[string]float64{}
	for _, np := range s.NodePools {
		for _, it := range s.InstanceTypes[np.Name] {
			if !admitsAll(np.Requirements, it.Requirements) {
				continue
			}
			p, ok := cheapestOffering(it, np.Requirements)
			if !ok {
				continue
			}
			if old, seen := price[it.Name]; !seen || p < old {
				best[it.Name], price[it.Name] = it, p
			}
		}
	}
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cols := make([]column, 0, len(keys))
	for _, k := range keys {
		it := best[k]
		alloc := it.Allocatable()
		col := column{name: k, price: scheduling.NodePrice(it, price[k], 0, listPrices).Total(), alloc: make([]float64, len(names))}
		useful := false
		cpu := -1
		for i, name := range names {
			if q, ok := alloc[name]; ok {
				col.alloc[i] = quantityValue(name, q)
				useful = useful || col.alloc[i] > 0
			}
			if name == corev1.ResourceCPU {
				cpu = i
			}
		}
		if !useful {
			continue
		}
		if b := it.Burst; !listPrices && b != nil && cpu >= 0 {
			// A burstable type is two columns: its CPU cut to the
			// baseline, and all of it at the price with credits.
			if full := scheduling.NodePrice(it, price[k], alloc.Cpu().MilliValue(), false).Total(); full > col.price {
				fullCol := col
				fullCol.alloc = slices.Clone(col.alloc)
				fullCol.price = full
				fullCol.name += "+credits"
				col.alloc[cpu] = float64(b.BaselineMilliCPU) / 1000
				cols = append(cols, fullCol)
			}
		}
		cols = append(cols, col)
	}
	return cols
}

// podDemand sums the pending pods' requests (init-container, sidecar and
// pod-overhead rules included) and counts them under "pods".
func podDemand(s *scheduling.Snapshot) corev1.ResourceList {
	total := corev1.ResourceList{}
	count := int64(0)
	for _, p := range s.Pods {
		if pods.IsOwnedByDaemonSet(p) {
			continue
		}
		count++
		for name, q := range pods.Requests(p) {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	total[corev1.ResourcePods] = *resource.NewQuantity(count, resource.DecimalSI)
	return total
}

// subtractExistingFree removes from demand what existing nodes that take
// pods still have free: a relaxation, as if their free capacity could be
// split among pods at will.
func subtractExistingFree(demand corev1.ResourceList, nodes []*scheduling.ExistingNode) {
	for _, n := range nodes {
		if n.MarkedForDeletion {
			continue
		}
		free := n.Allocatable.DeepCopy()
		for _, p := range n.Pods {
			for name, q := range pods.Requests(p) {
				if f, ok := free[name]; ok {
					f.Sub(q)
					free[name] = f
				}
			}
			if f, ok := free[corev1.ResourcePods]; ok {
				f.Sub(*resource.NewQuantity(1, resource.DecimalSI))
				free[corev1.ResourcePods] = f
			}
		}
		for name, f := range free {
			d, ok := demand[name]
			if !ok || f.Sign() <= 0 {
				continue
			}
			d.Sub(f)
			if d.Sign() < 0 {
				d = *resource.NewQuantity(0, resource.DecimalSI)
			}
			demand[name] = d
		}
	}
}

func usableNodes(nodes []*scheduling.ExistingNode) int {
	n := 0
	for _, node := range nodes {
		if !node.MarkedForDeletion {
			n++
		}
	}
	return n
}

// quantityValue is q as a float in the unit the program uses: cores for
// cpu, GiB for memory-like resources, plain counts otherwise.
func quantityValue(name corev1.ResourceName, q resource.Quantity) float64 {
	switch name {
	case corev1.ResourceCPU:
		return float64(q.MilliValue()) / 1000
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return q.AsApproximateFloat64() / (1 << 30)
	}
	return q.AsApproximateFloat64()
}
