package disruption

import (
	"fmt"
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
		if msg := nodeBlock(n, pool); msg != "" {
			v.Blocked = msg
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

		podMsg := podBlock(n, pdbs, in.Now)
		v.Blocked = podMsg
		if cond := apimeta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionTypeDrifted); cond != nil && cond.Status == metav1.ConditionTrue {
			v.Drifted = true
			c.driftAt = cond.LastTransitionTime.Time
			switch why, paused := in.PausedDrift[n.NodePool]; {
			case paused:
				v.Drift = fmt.Sprintf("drift of NodePool %q is paused: %s", n.NodePool, why)
			case podMsg != "" && n.NodeClaim.Spec.TerminationGracePeriod == nil:
				v.Drift = podMsg
			default:
				c.drift = true
			}
		}
		if podMsg == "" {
			v.Unconsolidatable = consolidationBlock(c)
			c.consolidatable = v.Unconsolidatable == ""
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
// at all, "" when none applies.
func nodeBlock(n *Node, pool *v1.NodePool) string {
	switch {
	case n.NodeClaim == nil:
		return "node isn't managed by karpenter"
	case n.NodePool == "":
		return fmt.Sprintf("node doesn't have required label (label=%s)", v1.LabelNodePool)
	case pool == nil:
		return fmt.Sprintf("nodepool %q not found", n.NodePool)
	case n.Node == nil:
		return "nodeclaim does not have an associated node"
	case !n.Initialized:
		return "node isn't initialized"
	case n.Deleting:
		return "node is deleting or marked for deletion"
	case n.Disrupting:
		return "node is already being disrupted"
	case n.Nominated:
		return "node is nominated for a pending pod"
	case n.Node.Annotations[v1.AnnotationDoNotDisrupt] == "true" || n.NodeClaim.Annotations[v1.AnnotationDoNotDisrupt] == "true":
		return fmt.Sprintf("disruption is blocked through the %q annotation", v1.AnnotationDoNotDisrupt)
	}
	return ""
}

// podBlock is Karpenter's pod-level reason: a pod that asks not to be
// disrupted, or a PDB that forbids evicting one of the node's pods.
func podBlock(n *Node, pdbs *pdbIndex, now time.Time) string {
	for _, p := range n.Pods {
		if pods.DoNotDisrupt(p, now) {
			return fmt.Sprintf("pod has %q annotation (Pod=%s)", v1.AnnotationDoNotDisrupt, podKey(p))
		}
	}
	for _, p := range n.Pods {
		if !pods.IsEvictable(p, now) || pods.IsVirtual(p) {
			continue
		}
		if keys := pdbs.blocking(p); len(keys) > 0 {
			return pdbMessage(keys)
		}
	}
	return ""
}

// consolidationBlock is why emptiness and consolidation may not consider a
// node that nothing else blocks (Karpenter's Unconsolidatable events), ""
// when they may.
func consolidationBlock(c *candidate) string {
	d := &c.pool.Spec.Disruption
	switch {
	case c.pool.IsStatic():
		return staticBlock(c.pool)
	case d.ConsolidateAfter.IsNever() && !d.ConsolidateAfter.IsZero():
		return fmt.Sprintf("NodePool %q has consolidation disabled", c.pool.Name)
	case !consolidatableCondition(c.node.NodeClaim):
		return fmt.Sprintf("node is not consolidatable yet (its %s condition is not True: pods changed within consolidateAfter)", v1.ConditionTypeConsolidatable)
	case c.empty():
		return ""
	case d.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty:
		return fmt.Sprintf("NodePool %q has non-empty consolidation disabled", c.pool.Name)
	case c.node.InstanceType == "" || c.node.Zone == "" || c.node.CapacityType == "":
		return "node's instance type, zone or capacity type is unknown"
	case c.node.Price <= 0:
		return fmt.Sprintf("no price known for instance type %q in %s/%s", c.node.InstanceType, c.node.Zone, c.node.CapacityType)
	}
	return ""
}

func consolidatableCondition(nc *v1.NodeClaim) bool {
	cond := apimeta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeConsolidatable)
	return cond != nil && cond.Status == metav1.ConditionTrue
}
