package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// DefaultNominationTTL is the nomination window when Options leaves it
// unset: Karpenter's window for its default 10 s batch (NominationWindow).
// A nomination holds while its NodeClaim has not initialised, then for the
// window after the plan or the initialisation, whichever is later. It
// usually ends sooner: when the pod binds, or when the node planned for it
// initialised and kube-scheduler still rejected the pod (see
// Cluster.Nominate).
const DefaultNominationTTL = 20 * time.Second

// NominationWindow is Karpenter's nomination window for a batch of at most
// batchMaxDuration: max(2 × batchMaxDuration, 10 s). Within it (counted
// from the plan or from the NodeClaim's initialisation, whichever is
// later) a pod planned onto an in-flight NodeClaim is not planned again;
// past it the next batch reconsiders the pod (and, if the NodeClaim still
// has room, places it there again).
func NominationWindow(batchMaxDuration time.Duration) time.Duration {
	return max(2*batchMaxDuration, 10*time.Second)
}

type nomination struct {
	nodeClaim string
	// pod is the latest version of the pod the model saw.
	pod *corev1.Pod
	// until is the end of the window: the plan's time plus the TTL, moved
	// to the NodeClaim's initialisation plus the TTL when that is later.
	until time.Time
	// planned is when the provisioner nominated the pod.
	planned time.Time
	// initialized is set once the NodeClaim's node initialised, with the
	// pod's PodScheduled condition at that moment: a rejection by
	// kube-scheduler after it (a changed condition) means the node did not
	// take the pod.
	initialized bool
	scheduled   corev1.PodCondition
	// rejectedSeen is when the model last saw kube-scheduler reject the
	// pod anew (a changed PodScheduled=False condition). The pod's watch
	// and the NodeClaim's lag apart: a rejection made after the node
	// initialised can reach the model before the initialisation does.
	rejectedSeen time.Time
}

// Nominate records that the provisioner placed pod on the in-flight
// NodeClaim nodeClaimName. Until the nomination expires, the pod counts
// against that NodeClaim in StateNode.
// A nomination expires one window (Options.NominationTTL) after the plan
// or after the NodeClaim's initialisation, whichever is later: while the
// NodeClaim launches and registers, which can take minutes in a large
// scale-up, kube-scheduler cannot place the pod anywhere joiner planned,
// and planning it again would only move it between in-flight NodeClaims
// (and its status.nominatedNodeName between their Nodes, displacing the
// pods planned there). A NodeClaim that fails or goes away ends its
// nominations at once, so a pod never waits on capacity that will not come;
// one that never initialises holds them at most MaxNominationHold.
// NominatedPods and HoldsNomination report it, so a consumer can leave it out
// of the pods it places. Binding or deleting the pod ends the nomination;
// so do, early and reported by TakeEnded, the NodeClaim failing or going
// away, and kube-scheduler rejecting the pod after the NodeClaim's node
// initialised (others took the room: waiting out the window would only
// delay the pod).
//
// The model keeps pod's fields without a deep copy, so the caller must
// not change them afterwards: the provisioner passes the informer cache's
// pods, which nobody changes, and in a scale-up thousands of pods are
// nominated at once (a deep copy is about 4 KiB each). Only the Pod struct
// is copied, so the model does not keep alive the list the caller's pod
// may sit in.
func (c *Cluster) Nominate(pod *corev1.Pod, nodeClaimName string) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	kept := *pod
	now := c.opts.Clock.Now()
	n := &nomination{nodeClaim: nodeClaimName, pod: &kept, planned: now, until: now.Add(c.opts.NominationTTL)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, bound := c.podNode[key]; bound {
		return
	}
	c.nominations[key] = n
	if e, ok := c.entries[c.nodeClaimKeys[nodeClaimName]]; ok && e.nodeClaim != nil {
		c.nodeClaimChangedLocked(e.nodeClaim)
	}
	c.changedLocked()
}

// HoldsNomination reports whether pod's nomination keeps it out of a
// provisioning pass: it is live, and its NodeClaim is in the model (not an
// unconfirmed NodeClaimCreated record past its TTL), not marked for
// deletion, and neither it nor its Node is being deleted. until is when
// the nomination stops being live if nothing else happens. The provisioner
// plans and triggers by this one test, so a pod it leaves out of passes is
// never also left without a batch.
func (c *Cluster) HoldsNomination(pod types.NamespacedName) (nodeClaimName string, until time.Time, ok bool) {
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nominations[pod]
	if !ok || !n.live(now) {
		return "", time.Time{}, false
	}
	key, ok := c.nodeClaimKeys[n.nodeClaim]
	if !ok {
		return "", time.Time{}, false
	}
	e, ok := c.entries[key]
	if !ok || e.nodeClaim == nil || c.expiredLocked(e, now) || c.goingAwayLocked(key, e) {
		return "", time.Time{}, false
	}
	return n.nodeClaim, n.liveUntil(), true
}

// PodsNominatedTo returns the pending pods last nominated to the NodeClaim
// nodeClaimName, sorted, including nominations that have expired: a pod
// keeps its last nomination until it binds, goes away or is nominated
// elsewhere, so the NodeClaim's failure can still be told to the pods that
// waited for it.
func (c *Cluster) PodsNominatedTo(nodeClaimName string) []types.NamespacedName {
	c.mu.RLock()
	var out []types.NamespacedName
	for key, n := range c.nominations {
		if n.nodeClaim == nodeClaimName {
			out = append(out, key)
		}
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// nominatedLocked gathers the live nominations of e's NodeClaim, by
// NodeClaim name, for stateNodeLocked.
func (c *Cluster) nominatedLocked(e *entry, now time.Time) map[string][]*corev1.Pod {
	if e.nodeClaim == nil {
		return nil
	}
	out := map[string][]*corev1.Pod{}
	for _, n := range c.nominations {
		if n.nodeClaim == e.nodeClaim.Name && n.live(now) {
			out[n.nodeClaim] = append(out[n.nodeClaim], n.pod)
		}
	}
	return out
}

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
