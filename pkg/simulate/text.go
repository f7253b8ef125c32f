package simulate

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// TextOptions shapes the text report.
type TextOptions struct {
	// MaxPods caps the pods listed per node and per unschedulable group;
	// 0 lists them all.
	MaxPods int
	// Brief leaves out the per-node lines, keeping the groups.
	Brief bool
}

// WriteText writes the report for people: a summary, then new nodes by
// NodePool and instance type, existing-node placements, and unschedulable
// pods grouped by identical reasons.
func (r *Report) WriteText(out io.Writer, opts TextOptions) error {
	w := bufio.NewWriter(out)
	r.writeSummary(w)
	r.writeNewNodes(w, opts)
	r.writeExisting(w, opts)
	r.writeUnschedulable(w, opts)
	r.writeBuffers(w)
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\nNotes\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	return w.Flush()
}

func (r *Report) writeSummary(w *bufio.Writer) {
	s := r.Summary
	fmt.Fprintf(w, "Plan: %s, %s/hour; %s scheduled", plural(s.Nodes, "new node"), dollars(s.CostPerHour), plural(s.PodsScheduled, "pod"))
	if s.PodsOnExistingNodes > 0 {
		fmt.Fprintf(w, " (%d on existing nodes)", s.PodsOnExistingNodes)
	}
	fmt.Fprintf(w, ", %d unschedulable; solved in %s\n", s.PodsUnschedulable, seconds(s.SolveSeconds))
	if s.ListPrices {
		fmt.Fprintf(w, "Priced at list prices (PRICE_MODEL=List)\n")
	} else if extra := s.CostPerHour - s.ListCostPerHour; extra > 5e-5 {
		fmt.Fprintf(w, "Billed: %s/hour list + %s/hour surplus CPU credits and volumes\n", dollars(s.ListCostPerHour), dollars(extra))
	}
	if b := s.LowerBound; b != nil && s.Nodes > 0 {
		fmt.Fprintf(w, "Lower bound (LP) for the pods on new nodes: %s/hour", dollars(b.LPCostPerHour))
		if b.LPAntiCostPerHour > b.LPCostPerHour {
			fmt.Fprintf(w, ", %s/hour with anti-affinity", dollars(b.LPAntiCostPerHour))
		}
		if b.LPAntiCostPerHour > 0 {
			fmt.Fprintf(w, "; plan costs %.2f× the bound", s.CostPerHour/max(b.LPCostPerHour, b.LPAntiCostPerHour))
		}
		fmt.Fprintln(w)
	}
}

// group is the new nodes of one NodePool and cheapest instance type.
type group struct {
	pool, instanceType string
	nodes              []*Node
	cost               float64
}

func (r *Report) writeNewNodes(w *bufio.Writer, opts TextOptions) {
	if len(r.Nodes) == 0 {
		return
	}
	byPool := map[string]map[string]*group{}
	for i := range r.Nodes {
		n := &r.Nodes[i]
		it := ""
		if len(n.InstanceTypes) > 0 {
			it = n.InstanceTypes[0]
		}
		if byPool[n.NodePool] == nil {
			byPool[n.NodePool] = map[string]*group{}
		}
		g := byPool[n.NodePool][it]
		if g == nil {
			g = &group{pool: n.NodePool, instanceType: it}
			byPool[n.NodePool][it] = g
		}
		g.nodes = append(g.nodes, n)
		g.cost += n.Price
	}
	nodeNumber := 0
	for _, pool := range r.poolOrder(byPool) {
		groups := make([]*group, 0, len(byPool[pool]))
		count, cost := 0, 0.0
		for _, g := range byPool[pool] {
			groups = append(groups, g)
			count += len(g.nodes)
			cost += g.cost
		}
		slices.SortFunc(groups, func(a, b *group) int {
			return cmp.Or(cmp.Compare(b.cost, a.cost), strings.Compare(a.instanceType, b.instanceType))
		})
		fmt.Fprintf(w, "\nNodePool %s: %s, %s/hour\n", pool, plural(count, "new node"), dollars(cost))
		for _, g := range groups {
			fmt.Fprintf(w, "  %s × %d  %s/hour\n", g.instanceType, len(g.nodes), dollars(g.cost))
			if opts.Brief {
				continue
			}
			for _, n := range g.nodes {
				nodeNumber++
				options := ""
				if k := len(n.InstanceTypes); k > 1 {
					options = fmt.Sprintf(", %d launch options", k)
				}
				fmt.Fprintf(w, "    node %d  %s  %s  %s/hour%s%s  %s: %s\n", nodeNumber,
					strings.Join(n.Requirements[corev1.LabelTopologyZone], ","),
					strings.Join(n.Requirements[v1.LabelCapacityType], ","),
					dollars(n.Price), n.PriceBreakdown(), options, plural(len(n.Pods), "pod"), listPods(n.Pods, opts.MaxPods))
			}
		}
	}
}

// poolOrder lists NodePools as the solver tries them: by weight, highest
// first, then by name.
func (r *Report) poolOrder(byPool map[string]map[string]*group) []string {
	pools := make([]string, 0, len(byPool))
	for p := range byPool {
		pools = append(pools, p)
	}
	weight := func(p string) int32 {
		if np := r.pools[p]; np != nil {
			return np.Weight
		}
		return 0
	}
	slices.SortFunc(pools, func(a, b string) int { return cmp.Or(cmp.Compare(weight(b), weight(a)), strings.Compare(a, b)) })
	return pools
}

func (r *Report) writeExisting(w *bufio.Writer, opts TextOptions) {
	if len(r.Existing) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExisting nodes: %s placed\n", plural(r.Summary.PodsOnExistingNodes, "pod"))
	for _, e := range r.Existing {
		fmt.Fprintf(w, "  %s  %s: %s\n", e.Node, plural(len(e.Pods), "pod"), listPods(e.Pods, opts.MaxPods))
	}
}

func (r *Report) writeUnschedulable(w *bufio.Writer, opts TextOptions) {
	if len(r.Unschedulable) == 0 {
		return
	}
	type block struct {
		reasons []string // "where: reason", in NodePool order
		pods    []string
	}
	blocks := map[string]*block{}
	var order []string
	for _, u := range r.Unschedulable {
		keys := make([]string, 0, len(u.Reasons))
		for k := range u.Reasons {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, r.compareReasonKeys)
		lines := make([]string, 0, len(keys))
		for _, k := range keys {
			where := "NodePool " + k
			if k == ExistingNodesKey {
				where = "existing nodes"
			}
			lines = append(lines, where+": "+u.Reasons[k].Message)
		}
		id := strings.Join(lines, "\n")
		b := blocks[id]
		if b == nil {
			b = &block{reasons: lines}
			blocks[id] = b
			order = append(order, id)
		}
		b.pods = append(b.pods, u.Pod)
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(len(blocks[b].pods), len(blocks[a].pods)) })
	fmt.Fprintf(w, "\nUnschedulable: %s, %s\n", plural(len(r.Unschedulable), "pod"), plural(len(order), "distinct reason"))
	for _, id := range order {
		b := blocks[id]
		fmt.Fprintf(w, "  %s: %s\n", plural(len(b.pods), "pod"), listPods(b.pods, opts.MaxPods))
		if len(b.reasons) == 0 {
			fmt.Fprintf(w, "    (no NodePool could be tried)\n")
		}
		for _, line := range b.reasons {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}

// compareReasonKeys orders reason keys as the solver tries them: NodePools
// by weight then name, existing nodes first.
func (r *Report) compareReasonKeys(a, b string) int {
	rank := func(k string) (int, int32) {
		if k == ExistingNodesKey {
			return 0, 0
		}
		if np := r.pools[k]; np != nil {
			return 1, -np.Weight
		}
		return 1, 0
	}
	ra, wa := rank(a)
	rb, wb := rank(b)
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(wa, wb), strings.Compare(a, b))
}

func listPods(pods []string, limit int) string {
	if limit <= 0 || len(pods) <= limit {
		return strings.Join(pods, ", ")
	}
	return strings.Join(pods[:limit], ", ") + fmt.Sprintf(", … and %d more", len(pods)-limit)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }

func seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0fms", s*1000)
	}
	return fmt.Sprintf("%.2fs", s)
}

// PriceBreakdown shows what a node's billed price is made of, when more
// than its list price: " (list $a + credits $b + volumes $c)"; "" otherwise.
func (n *Node) PriceBreakdown() string {
	if n.Credits == 0 && n.Volumes == 0 {
		return ""
	}
	parts := []string{"list " + dollars(n.ListPrice)}
	if n.Credits > 0 {
		parts = append(parts, "credits "+dollars(n.Credits))
	}
	if n.Volumes > 0 {
		parts = append(parts, "volumes "+dollars(n.Volumes))
	}
	return " (" + strings.Join(parts, " + ") + ")"
}
