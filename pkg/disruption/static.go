package disruption

import (
	"cmp"
	"slices"
	"sort"
	"time"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// StaticCount is a static NodePool's NodeClaims by where they stand, as
// Karpenter's static controllers count them.
type StaticCount struct {
	// Active NodeClaims are neither deleting nor being disrupted.
	Active int
	// Disrupting NodeClaims are candidates of a disruption command in
	// flight (a static drift waiting for its replacement): they still
	// count towards replicas until the replacement takes over.
	Disrupting int
	// Deleting NodeClaims are on their way out; they count against
	// limits.nodes only.
	Deleting int
}

// CountStatic counts pool's NodeClaims among nodes.
func CountStatic(nodes []Node, pool string) StaticCount {
	var c StaticCount
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.NodePool != pool || n.NodeClaim == nil:
		case n.Deleting:
			c.Deleting++
		case n.Disrupting:
			c.Disrupting++
		default:
			c.Active++
		}
	}
	return c
}

// ScaleDownOrder lists the active NodeClaims of static NodePool pool in the
// order a scale-down removes them, as Karpenter's: NodeClaims that have not
// launched first, then empty nodes (no pod that needs another node, no
// do-not-disrupt pod), then the rest by disruption cost (the pods' eviction
// cost times the node's remaining lifetime), nodes running a
// do-not-disrupt pod last. Node budgets do not apply (scaling down is the
// user's explicit request); PDBs are honoured by the drain that follows
// the NodeClaim's deletion. It returns Node names.
func ScaleDownOrder(nodes []Node, pool string, now time.Time) []string {
	type ranked struct {
		name     string
		rank     int // 0 unlaunched, 1 empty, 2 others, 3 do-not-disrupt
		cost     float64
		creation time.Time
	}
	var out []ranked
	for i := range nodes {
		n := &nodes[i]
		if n.NodePool != pool || n.NodeClaim == nil || n.Deleting || n.Disrupting {
			continue
		}
		r := ranked{name: n.Name, creation: n.NodeClaim.CreationTimestamp.Time}
		blocked := false
		reschedulable := 0
		for _, p := range n.Pods {
			if pods.DoNotDisrupt(p, now) {
				blocked = true
			}
			if pods.IsReschedulable(p) {
				reschedulable++
				r.cost += evictionCost(p)
			}
		}
		r.cost *= lifetimeRemaining(n.NodeClaim, now)
		switch {
		case n.NodeClaim.Status.ProviderID == "" && n.Node == nil:
			r.rank = 0
		case blocked:
			r.rank = 3
		case reschedulable == 0:
			r.rank = 1
		default:
			r.rank = 2
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.cost, b.cost),
			b.creation.Compare(a.creation), cmp.Compare(a.name, b.name))
	})
	names := make([]string, len(out))
	for i, r := range out {
		names[i] = r.name
	}
	return names
}

// staticDrift replaces drifted nodes of static NodePools, as Karpenter's
// StaticDrift does: a fresh NodeClaim from the NodePool's template for the
// node that drifted first, launched before the drifted one is deleted,
// within the Drifted budget and limits.nodes, and never while the NodePool
// is over its replicas (a scale-down is under way). No simulation: the
// pool's count, not its pods, decides what it runs.
func (e *engine) staticDrift() (*Command, error) {
	var drifted []*candidate
	for _, c := range e.cands {
		if c.staticDrift {
			drifted = append(drifted, c)
		}
	}
	sort.SliceStable(drifted, func(i, j int) bool { return drifted[i].driftAt.Before(drifted[j].driftAt) })
	budget := newBudgetLeft(e.allowed, ReasonDrifted)
	for _, c := range drifted {
		pool := c.pool
		count := CountStatic(e.in.Nodes, pool.Name)
		v := &e.verdicts[c.idx]
		switch limit, limited := pool.Spec.Limits[v1.ResourceNodes]; {
		case int64(count.Active+count.Disrupting) > *pool.Spec.Replicas:
			v.Drift = Why{Kind: WhyStaticScalingDown, NodePool: pool.Name, Count: *pool.Spec.Replicas}
			continue
		case limited && int64(count.Active+count.Disrupting+count.Deleting) >= limit.Value():
			v.Drift = Why{Kind: WhyStaticAtLimit, NodePool: pool.Name, Count: limit.Value()}
			continue
		case budget[pool.Name] <= 0:
			v.Drift = noBudget(pool.Name, ReasonDrifted)
			continue
		}
		replacement := nodepool.StaticNodeClaim(pool, e.in.InstanceTypes[pool.Name])
		if replacement == nil {
			v.Drift = Why{Kind: WhyStaticNoInstanceType, NodePool: pool.Name}
			continue
		}
		return &Command{
			Method: MethodStaticDrift, Reason: ReasonDrifted,
			Candidates:     []string{c.node.Name},
			Replacements:   []*scheduling.NewNodeClaim{replacement},
			SavingsPerHour: c.node.Price - replacement.Price,
			PodsMoved:      len(c.pods),
		}, nil
	}
	return nil, nil
}
