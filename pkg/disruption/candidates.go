package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// candidate is a managed node some method may disrupt now, with what the
// methods need to rank and simulate it.
type candidate struct {
	idx  int // into Input.Nodes and Decision.Verdicts
	node *Node
	pool *v1.NodePool
	// pods are the pods that must find another node (no daemon, mirror or
	// finished pods).
	pods []*corev1.Pod
	// cost is the disruption cost: the pods' eviction costs times the
	// share of the node's lifetime still ahead of it.
	cost float64
	// consolidatable: emptiness and consolidation may take it (graceful:
	// no pod- or node-level block, consolidation enabled, quiet long
	// enough).
	consolidatable bool
	// drift: the drift method may take it (Drifted=True, drift not paused
	// for its pool; pod-level blocks ignored when the NodeClaim has a
	// terminationGracePeriod, as Karpenter's eventual disruption does).
	drift   bool
	driftAt time.Time
	// staticDrift: the node is a static NodePool's and drifted; only the
	// static drift method takes it.
	staticDrift bool
}

func (c *candidate) empty() bool { return len(c.pods) == 0 }

// classify applies Karpenter's candidate rules to every managed node: a
// Verdict for each (in Input.Nodes order) and the candidates.
func classify(in *Input) ([]Verdict, []*candidate) {
	pdbs := newPDBIndex(in.PDBs)
	verdicts := make([]Verdict, len(in.Nodes))
	var cands []*candidate
	for i := range in.Nodes {
		n := &in.Nodes[i]
		v := &verdicts[i]
		v.Node, v.NodePool, v.Price = n.Name, n.NodePool, n.Price
		pool := in.NodePools[n.NodePool]
		if why := nodeBlock(n, pool); !why.IsZero() {
			v.Blocked = why
			continue
		}
		c := &candidate{idx: i, node: n, pool: pool}
		for _, p := range n.Pods {
			if pods.IsReschedulable(p) {
				c.pods = append(c.pods, p)
				if !pods.IsVirtual(p) {
					// Room moves for free: no process is evicted.
					c.cost += evictionCost(p)
				}
				if pods.IsOwnerless(p) && !pods.IsVirtual(p) && pods.IsEvictable(p, in.Now) {
					v.Ownerless = append(v.Ownerless, podKey(p))
				}
			}
		}
		c.cost *= lifetimeRemaining(n.NodeClaim, in.Now)
		v.Empty, v.DisruptionCost = c.empty(), c.cost

		podWhy := podBlock(n, pdbs, in.Now)
		v.Blocked = podWhy
		if cond := apimeta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
			v.Drifted = true
			c.driftAt = cond.LastTransitionTime.Time
			switch why, paused := in.PausedDrift[n.NodePool]; {
			case paused:
				v.Drift = Why{Kind: WhyDriftPaused, NodePool: n.NodePool, Detail: why}
			case !podWhy.IsZero() && n.NodeClaim.Spec.TerminationGracePeriod == nil:
				v.Drift = podWhy
			default:
				c.drift = true
			}
		}
		if podWhy.IsZero() {
			v.Unconsolidatable = consolidationBlock(c)
			c.consolidatable = v.Unconsolidatable.IsZero()
		}
		if pool.IsStatic() {
			c.staticDrift, c.drift = c.drift, false
		}
		v.Candidate = c.consolidatable || c.drift || c.staticDrift
		if v.Candidate {
			cands = append(cands, c)
		}
	}
	return verdicts, cands
}

// nodeBlock is Karpenter's node-level reason a node may not be disrupted
// at all, zero when none applies.
func nodeBlock(n *Node, pool *v1.NodePool) Why {
	switch {
	case n.NodeClaim == nil:
		return Why{Kind: WhyNotManaged}
	case n.NodePool == "":
		return Why{Kind: WhyNoNodePoolLabel}
	case pool == nil:
		return Why{Kind: WhyNodePoolNotFound, NodePool: n.NodePool}
	case n.Node == nil:
		return Why{Kind: WhyNoNode}
	case !n.Initialized:
		return Why{Kind: WhyNotInitialized}
	case n.Deleting:
		return Why{Kind: WhyDeleting}
	case n.Disrupting:
		return Why{Kind: WhyDisrupting}
	case n.Nominated:
		return Why{Kind: WhyNominated}
	case n.Node.Annotations[v1.AnnotationDoNotDisrupt] == "true" || n.NodeClaim.Annotations[v1.AnnotationDoNotDisrupt] == "true":
		return Why{Kind: WhyNodeDoNotDisrupt}
	}
	return Why{}
}

// podBlock is Karpenter's pod-level reason: a pod that asks not to be
// disrupted, or a PDB that forbids evicting one of the node's pods.
func podBlock(n *Node, pdbs *pdbIndex, now time.Time) Why {
	for _, p := range n.Pods {
		if pods.DoNotDisrupt(p, now) {
			return Why{Kind: WhyPodDoNotDisrupt, Pod: podKey(p)}
		}
	}
	for _, p := range n.Pods {
		if !pods.IsEvictable(p, now) || pods.IsVirtual(p) {
			continue
		}
		if keys := pdbs.blocking(p); len(keys) > 0 {
			return Why{Kind: WhyPDB, PDBs: keys}
		}
	}
	return Why{}
}

// consolidationBlock is why emptiness and consolidation may not consider a
// node that nothing else blocks (Karpenter's Unconsolidatable events), zero
// when they may.
func consolidationBlock(c *candidate) Why {
	d := &c.pool.Spec.Disruption
	switch {
	case c.pool.IsStatic():
		return Why{Kind: WhyStatic, NodePool: c.pool.Name}
	case d.ConsolidateAfter.IsNever() && !d.ConsolidateAfter.IsZero():
		return Why{Kind: WhyConsolidationDisabled, NodePool: c.pool.Name}
	case !consolidatableCondition(c.node.NodeClaim):
		return Why{Kind: WhyNotConsolidatable}
	case c.empty():
		return Why{}
	case d.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty:
		return Why{Kind: WhyWhenEmpty, NodePool: c.pool.Name}
	case c.node.InstanceType == "" || c.node.Zone == "" || c.node.CapacityType == "":
		return Why{Kind: WhyUnknownOffering}
	case c.node.Price <= 0:
		return Why{Kind: WhyNoPrice, InstanceType: c.node.InstanceType, Zone: c.node.Zone, CapacityType: c.node.CapacityType}
	}
	return Why{}
}

func consolidatableCondition(nc *v1.NodeClaim) bool {
	cond := apimeta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeConsolidatable)
	return cond != nil && cond.Status == metav1.ConditionTrue
}
