package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Why a nomination ended before its window.
const (
	// EndedNodeFilledUp: the NodeClaim's node initialised and
	// kube-scheduler rejected the pod since; others took the room.
	EndedNodeFilledUp = "NodeFilledUp"
	// EndedNodeClaimFailed: the NodeClaim is being deleted or its launch
	// failed.
	EndedNodeClaimFailed = "NodeClaimFailed"
	// EndedNodeClaimGone: the NodeClaim was deleted.
	EndedNodeClaimGone = "NodeClaimGone"
)

// EndedNomination is a nomination that ended before its window, so the
// pod is planned again at the next batch.
type EndedNomination struct {
	// Pod is the latest version of the pod the model saw.
	Pod       *corev1.Pod
	NodeClaim string
	// Node is the NodeClaim's node name, when it had one.
	Node string
	// Reason is one of the Ended* constants.
	Reason string
}

// TakeEnded returns the nominations that ended early since the last call,
// in the order they ended, and forgets them.
func (c *Cluster) TakeEnded() []EndedNomination {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.ended
	c.ended = nil
	return out
}

// Unnominate forgets pod's nomination without a report: the provisioner
// planned the pod again and found no room for it anywhere, so the old plan
// must not keep a place (or a status.nominatedNodeName) for it.
func (c *Cluster) Unnominate(pod types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nominations[pod]; ok {
		delete(c.nominations, pod)
		c.changedLocked()
	}
}

// NominatedNode is where a live nomination will put a pod: its NodeClaim,
// and the NodeClaim's node once it exists.
type NominatedNode struct {
	NodeClaim string
	// Node is empty until the NodeClaim's Node is registered.
	Node string
}

// Nomination returns pod's nomination, also past its window: a pod whose
// window passed is planned again (onto the first node with room in the
// solver's order, its own or another), and the NominationWriter keeps the
// pod's status.nominatedNodeName on the old node until the new plan
// replaces the nomination or it ends.
func (c *Cluster) Nomination(pod types.NamespacedName) (NominatedNode, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nominations[pod]
	if !ok {
		return NominatedNode{}, false
	}
	return NominatedNode{NodeClaim: n.nodeClaim, Node: c.registeredNodeLocked(n.nodeClaim)}, true
}

// SetNominatedNodeName records that joiner wrote node into pod's
// status.nominatedNodeName ("" after clearing it): joiner owns the field
// for these pods.
func (c *Cluster) SetNominatedNodeName(pod types.NamespacedName, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if node == "" {
		delete(c.nominatedNodeNames, pod)
		return
	}
	c.nominatedNodeNames[pod] = node
}

// NominatedNodeName returns the status.nominatedNodeName joiner wrote for
// pod, if it wrote one and has not cleared it.
func (c *Cluster) NominatedNodeName(pod types.NamespacedName) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	node, ok := c.nominatedNodeNames[pod]
	return node, ok
}

// PodsWithNominatedNodeName returns the pods whose status.nominatedNodeName
// joiner wrote to node, ordered.
func (c *Cluster) PodsWithNominatedNodeName(node string) []types.NamespacedName {
	c.mu.RLock()
	var out []types.NamespacedName
	for key, n := range c.nominatedNodeNames {
		if n == node {
			out = append(out, key)
		}
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// nodeClaimChangedLocked applies a NodeClaim's new state to the
// nominations to it: a failed NodeClaim ends them; once its node
// initialised, each remembers the pod's PodScheduled condition, so a later
// rejection can be told apart from the ones before, and one whose pod the
// model saw rejected after the initialisation keeps only RejectionGrace.
func (c *Cluster) nodeClaimChangedLocked(nc *v1.NodeClaim) {
	failed := nc.DeletionTimestamp != nil || nc.StatusConditions().IsFalse(v1.ConditionTypeLaunched)
	initialized := nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized)
	if !failed && !initialized {
		return
	}
	for key, n := range c.nominations {
		if n.nodeClaim != nc.Name {
			continue
		}
		switch {
		case failed:
			c.endLocked(key, n, EndedNodeClaimFailed, nc.Status.NodeName)
		case !n.initialized:
			n.initialized = true
			n.scheduled = podScheduledOrZero(n.pod)
			// The pod's window starts when its room can take it.
			if until := c.opts.Clock.Now().Add(c.opts.NominationTTL); until.After(n.until) {
				n.until = until
			}
			if rejectedAfter(n.rejectedSeen, nc) {
				// Probably tried with the node ready and rejected, but the
				// time is when the model saw the rejection, not when
				// kube-scheduler made it: the pod keeps its room for a
				// grace, in which a rejection made on the tainted node is
				// followed by kube-scheduler's retry on the ready one.
				if grace := c.opts.Clock.Now().Add(RejectionGrace); grace.Before(n.until) {
					n.until = grace
				}
			}
		}
	}
}

// live reports whether the nomination still holds at now (see liveUntil).
func (n *nomination) live(now time.Time) bool {
	return now.Before(n.liveUntil())
}

// liveUntil is when the nomination stops holding if nothing changes: the
// end of its window, or for a NodeClaim whose node has not initialised
// yet, MaxNominationHold after the plan if that is later (see
// Cluster.Nominate).
func (n *nomination) liveUntil() time.Time {
	if n.initialized {
		return n.until
	}
	return latest(n.until, n.planned.Add(MaxNominationHold))
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// MaxNominationHold bounds how long a nomination waits for its NodeClaim to
// initialise: Karpenter's registration TTL. The NodeClaims joiner launches
// are deleted sooner when they do not come up, which ends their
// nominations; this covers the others (a NodeClaim of a node class no
// provider serves, one whose Initialized condition never turns True). Past
// it the pod is planned again.
const MaxNominationHold = 15 * time.Minute

// NotifyNominationEnded makes the Cluster call fn with the pod of every
// nomination that ends early (the ones TakeEnded reports), as it ends,
// replacing any fn set before. The provisioner opens no batch for a pod
// whose nomination holds (HoldsNomination); this is how it learns that the
// pod needs a plan again at once. fn is called with the Cluster's lock
// held: it must not block nor call back into the Cluster.
func (c *Cluster) NotifyNominationEnded(fn func(pod *corev1.Pod)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onEnded = fn
}

// endLocked ends the nomination of pod and records why.
func (c *Cluster) endLocked(pod types.NamespacedName, n *nomination, reason, node string) {
	delete(c.nominations, pod)
	c.ended = append(c.ended, EndedNomination{Pod: n.pod.DeepCopy(), NodeClaim: n.nodeClaim, Node: node, Reason: reason})
	if c.onEnded != nil {
		c.onEnded(n.pod)
	}
	// Bounded: a provisioner that stopped taking them (not the leader)
	// keeps only the latest.
	if len(c.ended) > maxEnded {
		c.ended = append([]EndedNomination(nil), c.ended[len(c.ended)-maxEnded:]...)
	}
}

// RejectionGrace is how long a nomination holds once its node initialised
// when the model saw the pod rejected after the initialisation but before
// it learnt of it: long enough for kube-scheduler's retry when the
// rejection was made on the still tainted node, short against the window
// when the node really turned the pod down (a topology spread skew).
const RejectionGrace = 3 * time.Second

// maxEnded bounds the ended nominations kept for TakeEnded.
const maxEnded = 10000

// registeredNodeLocked is the name of the Node joined to the NodeClaim, or
// "" while there is none.
func (c *Cluster) registeredNodeLocked(nodeClaimName string) string {
	e, ok := c.entries[c.nodeClaimKeys[nodeClaimName]]
	if !ok || e.node == nil {
		return ""
	}
	return e.node.Name
}

// nodeNameLocked names the NodeClaim's node for a message: the joined
// Node, else the NodeClaim's status.nodeName, else "".
func (c *Cluster) nodeNameLocked(nodeClaimName string) string {
	if name := c.registeredNodeLocked(nodeClaimName); name != "" {
		return name
	}
	if e, ok := c.entries[c.nodeClaimKeys[nodeClaimName]]; ok && e.nodeClaim != nil {
		return e.nodeClaim.Status.NodeName
	}
	return ""
}

// rejectedSince reports whether pod carries a kube-scheduler rejection
// newer than before: PodScheduled=False, reason Unschedulable, with a
// different transition time, message or probe time. kube-scheduler keeps
// the transition time while the pod stays unschedulable, so a fresh
// attempt shows as a new message (the node counts and reasons change once
// a node initialises).
func rejectedSince(pod *corev1.Pod, before corev1.PodCondition) bool {
	cond := podScheduled(pod)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
		return false
	}
	return !cond.LastTransitionTime.Equal(&before.LastTransitionTime) ||
		cond.Message != before.Message ||
		!cond.LastProbeTime.Equal(&before.LastProbeTime)
}

// rejectedAfter reports whether the model saw a rejection (at seen) after
// nc's node initialised: after the second its Initialized condition
// records (the API server keeps transition times to the second). The pod's
// watch and the NodeClaim's lag apart, so such a rejection can reach the
// model before the initialisation does; it may also have been made before
// the initialisation and seen late.
func rejectedAfter(seen time.Time, nc *v1.NodeClaim) bool {
	cond := nc.StatusConditions().Get(v1.ConditionTypeInitialized)
	if seen.IsZero() || cond == nil || cond.LastTransitionTime.IsZero() {
		return false
	}
	return seen.After(cond.LastTransitionTime.Add(time.Second))
}

// podScheduledOrZero is the pod's PodScheduled condition, or none.
func podScheduledOrZero(pod *corev1.Pod) corev1.PodCondition {
	if cond := podScheduled(pod); cond != nil {
		return *cond
	}
	return corev1.PodCondition{}
}

func podScheduled(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
