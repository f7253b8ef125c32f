package state

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// DefaultNominationTTL is the nomination window when Options leaves it
// unset: Karpenter's window for its default 10 s batch (NominationWindow).
// A nomination holds while its NodeClaim has not initialised, then for the
// window after the plan or the initialisation, whichever is later. It
// usually ends sooner: when the pod binds, or when the node planned for it
// initialised and kube-scheduler still rejected the pod (see
// Cluster.Nominate). A pod still pending is planned again half a window
// before its nomination lapses, and renewed (see Nominations.Holds).
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

// NominationReader is what readers of nominations ask: whether a pod's
// nomination keeps it out of a provisioning pass (to which NodeClaim,
// until when), where a pod was last nominated, which pods a NodeClaim was
// nominated for, and which status.nominatedNodeName joiner itself wrote.
// The provisioner's pod trigger, the live model, the NodeClaim lifecycle
// and the nominated-node-name writer read through it; disruption and the
// status page read the live nominations as StateNode.NominatedPods, which
// Nominations fills.
type NominationReader interface {
	Holds(pod types.NamespacedName) (nodeClaimName string, until time.Time, ok bool)
	Nomination(pod types.NamespacedName) (NominatedNode, bool)
	PodsNominatedTo(nodeClaimName string) []types.NamespacedName
	NominatedNodeName(pod types.NamespacedName) (string, bool)
}

// Nominator is what the provisioner, the one writer of nominations,
// needs: to say which pods it saw pending, to nominate a placed pod, to
// release one it found no room for, and to learn which nominations ended
// before their window.
type Nominator interface {
	NominationReader
	Seen(pods []*corev1.Pod)
	Nominate(pod *corev1.Pod, nodeClaimName string)
	Release(pod *corev1.Pod)
	TakeEnded() []EndedNomination
	NotifyEnded(fn func(pod *corev1.Pod))
}

// Nominations is the provisioner's memory of where each planned pod goes:
// one nomination per pod to the in-flight NodeClaim planned for it, with
// its window (see Nominate), the nominations that ended early, the
// status.nominatedNodeName values joiner wrote, and the decision times
// behind the karpenter_pods_provisioning_* metrics. It lives in the
// Cluster (Cluster.Nominations) and shares its lock: a nomination counts
// against its NodeClaim in the same StateNode read that shows the pods
// bound to it, and a pod's binding, a NodeClaim's failure or deletion end
// nominations in the same update that records them, so no read ever shows
// a pod both bound and nominated.
type Nominations struct {
	// c is the model the nominations live in; c.mu guards every field
	// below.
	c   *Cluster
	ttl time.Duration
	// byPod are the nominations, by pod.
	byPod map[types.NamespacedName]*nomination
	// ended are the nominations that ended early (their node filled up,
	// their NodeClaim failed or went away), in order, until TakeEnded
	// hands them to the provisioner to tell the pods.
	ended []EndedNomination
	// written are the pods whose status.nominatedNodeName joiner wrote,
	// with the node name it wrote: joiner owns the field for these pods
	// only.
	written map[types.NamespacedName]string
	// onEnded is called with the pod of each nomination that ends early
	// (see NotifyEnded); nil until set.
	onEnded func(*corev1.Pod)
	// decisions has its own lock: when the provisioner first saw each
	// pending pod and first decided where it can run.
	decisions *metrics.PodDecisionTimes
}

func newNominations(c *Cluster, ttl time.Duration) *Nominations {
	return &Nominations{
		c:         c,
		ttl:       ttl,
		byPod:     map[types.NamespacedName]*nomination{},
		written:   map[types.NamespacedName]string{},
		decisions: metrics.NewPodDecisionTimes(),
	}
}

// Nominations returns the model's nominations.
func (c *Cluster) Nominations() *Nominations { return c.nom }

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

// Seen records that the provisioner considered these pending pods; only
// the first time counts (karpenter_pods_scheduling_decision_duration_seconds
// starts there).
func (n *Nominations) Seen(pods []*corev1.Pod) {
	now := n.c.opts.Clock.Now()
	for _, pod := range pods {
		n.decisions.Seen(pod, now)
	}
}

// Nominate records that the provisioner placed pod on the in-flight
// NodeClaim nodeClaimName; with nodeClaimName "" (a node joiner does not
// manage), that it decided where the pod can run and that the pod's
// earlier nomination, if any, no longer stands: the new plan replaces it
// as a nomination elsewhere would, so the old NodeClaim stops counting the
// pod (and keeping its status.nominatedNodeName) while the pod goes to
// another node. Until the
// nomination expires, the pod counts against that NodeClaim in StateNode.
// A nomination expires one window (Options.NominationTTL) after the plan
// or after the NodeClaim's initialisation, whichever is later: while the
// NodeClaim launches and registers, which can take minutes in a large
// scale-up, kube-scheduler cannot place the pod anywhere joiner planned,
// and planning it again would only move it between in-flight NodeClaims
// (and its status.nominatedNodeName between their Nodes, displacing the
// pods planned there). A NodeClaim that fails or goes away ends its
// nominations at once, so a pod never waits on capacity that will not come;
// one that never initialises holds them at most MaxNominationHold.
// Holds reports it, so a consumer can leave the pod out of the pods it
// places. Binding or deleting the pod ends the nomination; so do, early
// and reported by TakeEnded, the NodeClaim failing or going away, and
// kube-scheduler rejecting the pod after the NodeClaim's node initialised
// (others took the room: waiting out the window would only delay the pod).
//
// The model keeps pod's fields without a deep copy, so the caller must
// not change them afterwards: the provisioner passes the informer cache's
// pods, which nobody changes, and in a scale-up thousands of pods are
// nominated at once (a deep copy is about 4 KiB each). Only the Pod struct
// is copied, so the model does not keep alive the list the caller's pod
// may sit in.
func (n *Nominations) Nominate(pod *corev1.Pod, nodeClaimName string) {
	now := n.c.opts.Clock.Now()
	n.decisions.Decided(pod, now)
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if nodeClaimName == "" {
		n.forget(key)
		return
	}
	kept := *pod
	nom := &nomination{nodeClaim: nodeClaimName, pod: &kept, planned: now, until: now.Add(n.ttl)}
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, bound := c.podNode[key]; bound {
		return
	}
	n.byPod[key] = nom
	if e, ok := c.entries[c.nodeClaimKeys[nodeClaimName]]; ok && e.nodeClaim != nil {
		// Only the new nomination takes in the NodeClaim's state: the
		// others to it took it in when it changed. Scanning them all
		// here cost a pass that planned thousands of pods onto
		// initialised nodes quadratic time under the model's lock.
		n.applyNodeClaimLocked(key, nom, e.nodeClaim, now)
	}
	c.changedLocked()
}

// Release forgets pod's nomination without a report: the provisioner
// planned the pod again and found no room for it anywhere, so the old plan
// must not keep a place (or a status.nominatedNodeName) for it. It is a
// verdict on the pod all the same (the decision duration ends).
func (n *Nominations) Release(pod *corev1.Pod) {
	n.decisions.Unschedulable(pod, n.c.opts.Clock.Now())
	n.forget(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
}

// forget drops pod's nomination, if any, without a report.
func (n *Nominations) forget(pod types.NamespacedName) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if _, ok := n.byPod[pod]; ok {
		delete(n.byPod, pod)
		n.c.changedLocked()
	}
}

// PublishDecisions sets the karpenter_pods_provisioning_* gauges for pods
// (every pod of the cluster) at now and observes the durations of the pods
// that bound or started since the last call (metrics.PodDecisionTimes).
// Until it is first called nothing is remembered
// (DISABLE_CLUSTER_STATE_OBSERVABILITY).
func (n *Nominations) PublishDecisions(pods []*corev1.Pod, now time.Time) {
	n.decisions.Publish(pods, now)
}

// Holds reports whether pod's nomination keeps it out of a provisioning
// pass: it is live and not yet due for renewal (see renewAt), and its
// NodeClaim is in the model, not marked for deletion, and neither it nor its Node is
// being deleted. until is when the nomination stops keeping the pod out
// if nothing else happens: half a window before it would stop being live,
// so the pass that plans the pod again (and, when its NodeClaim still has
// room for it, nominates it there anew) runs while the nomination still
// counts, and the NodeClaim is never seen without the pods that wait for
// it. The provisioner plans and triggers by this one test, so a pod it
// leaves out of passes is never also left without a batch.
func (n *Nominations) Holds(pod types.NamespacedName) (nodeClaimName string, until time.Time, ok bool) {
	c := n.c
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	nom, ok := n.byPod[pod]
	if !ok || !now.Before(n.renewAt(nom)) {
		return "", time.Time{}, false
	}
	key, ok := c.nodeClaimKeys[nom.nodeClaim]
	if !ok {
		return "", time.Time{}, false
	}
	e, ok := c.entries[key]
	if !ok || e.nodeClaim == nil || c.goingAwayLocked(key, e) {
		return "", time.Time{}, false
	}
	return nom.nodeClaim, n.renewAt(nom), true
}

// renewAt is when a nomination stops keeping its pod out of provisioning
// passes: half a window before it stops being live. Karpenter plans every
// pending pod in every pass and nominates again the nodes they would go
// to, its window being two batches long, so a node stays nominated while
// pending pods still count on it. Joiner leaves a nominated pod out of the
// passes while its nomination holds, and plans it again from here on: a
// pod that kube-scheduler has not bound yet (an overloaded control plane
// can take minutes) is planned again half a window before its nomination
// lapses, onto the room it holds (the live model does not count the pod
// against its own NodeClaim), and renewed there, instead of the NodeClaim
// looking empty to disruption and its pod being planned from scratch once
// the window has passed.
func (n *Nominations) renewAt(nom *nomination) time.Time {
	return nom.liveUntil().Add(-n.ttl / 2)
}

// PodsNominatedTo returns the pending pods last nominated to the NodeClaim
// nodeClaimName, sorted, including nominations that have expired: a pod
// keeps its last nomination until it binds, goes away or is nominated
// elsewhere, so the NodeClaim's failure can still be told to the pods that
// waited for it.
func (n *Nominations) PodsNominatedTo(nodeClaimName string) []types.NamespacedName {
	n.c.mu.RLock()
	var out []types.NamespacedName
	for key, nom := range n.byPod {
		if nom.nodeClaim == nodeClaimName {
			out = append(out, key)
		}
	}
	n.c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// liveByNodeClaimLocked gathers the live nominations at now by NodeClaim
// name (for one NodeClaim when only is set), for the StateNodes.
func (n *Nominations) liveByNodeClaimLocked(now time.Time, only string) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, nom := range n.byPod {
		if (only == "" || nom.nodeClaim == only) && nom.live(now) {
			out[nom.nodeClaim] = append(out[nom.nodeClaim], nom.pod)
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
func (n *Nominations) TakeEnded() []EndedNomination {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	out := n.ended
	n.ended = nil
	return out
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
// solver's order, its own or another), and the nominated-node-name writer
// keeps the pod's status.nominatedNodeName on the old node until the new
// plan replaces the nomination or it ends.
func (n *Nominations) Nomination(pod types.NamespacedName) (NominatedNode, bool) {
	n.c.mu.RLock()
	defer n.c.mu.RUnlock()
	nom, ok := n.byPod[pod]
	if !ok {
		return NominatedNode{}, false
	}
	return NominatedNode{NodeClaim: nom.nodeClaim, Node: n.c.registeredNodeLocked(nom.nodeClaim)}, true
}

// SetNominatedNodeName records that joiner wrote node into pod's
// status.nominatedNodeName ("" after clearing it): joiner owns the field
// for these pods.
func (n *Nominations) SetNominatedNodeName(pod types.NamespacedName, node string) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if node == "" {
		delete(n.written, pod)
		return
	}
	n.written[pod] = node
}

// NominatedNodeName returns the status.nominatedNodeName joiner wrote for
// pod, if it wrote one and has not cleared it.
func (n *Nominations) NominatedNodeName(pod types.NamespacedName) (string, bool) {
	n.c.mu.RLock()
	defer n.c.mu.RUnlock()
	node, ok := n.written[pod]
	return node, ok
}

// PodsWithNominatedNodeName returns the pods whose status.nominatedNodeName
// joiner wrote to node, ordered.
func (n *Nominations) PodsWithNominatedNodeName(node string) []types.NamespacedName {
	n.c.mu.RLock()
	var out []types.NamespacedName
	for key, name := range n.written {
		if name == node {
			out = append(out, key)
		}
	}
	n.c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// NotifyEnded makes the nominations call fn with the pod of every
// nomination that ends early (the ones TakeEnded reports), as it ends,
// replacing any fn set before. The provisioner opens no batch for a pod
// whose nomination holds (Holds); this is how it learns that the pod
// needs a plan again at once. fn is called with the model's lock held: it
// must not block nor call back into the Cluster.
func (n *Nominations) NotifyEnded(fn func(pod *corev1.Pod)) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.onEnded = fn
}

// The model's updates, applied with its lock held.

// nodeClaimChangedLocked applies a NodeClaim's new state to the
// nominations to it: a failed NodeClaim ends them; once its node
// initialised, each remembers the pod's PodScheduled condition, so a later
// rejection can be told apart from the ones before, and one whose pod the
// model saw rejected after the initialisation keeps only RejectionGrace.
func (n *Nominations) nodeClaimChangedLocked(nc *v1.NodeClaim) {
	if !nodeClaimFailed(nc) && !nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
		return
	}
	now := n.c.opts.Clock.Now()
	for key, nom := range n.byPod {
		if nom.nodeClaim == nc.Name {
			n.applyNodeClaimLocked(key, nom, nc, now)
		}
	}
}

// nodeClaimFailed reports whether nc is being deleted or failed to launch.
func nodeClaimFailed(nc *v1.NodeClaim) bool {
	return nc.DeletionTimestamp != nil || nc.StatusConditions().IsFalse(v1.ConditionTypeLaunched)
}

// applyNodeClaimLocked applies nc's state at now to one nomination to it,
// pod key's (see nodeClaimChangedLocked).
func (n *Nominations) applyNodeClaimLocked(key types.NamespacedName, nom *nomination, nc *v1.NodeClaim, now time.Time) {
	switch {
	case nodeClaimFailed(nc):
		n.endLocked(key, nom, EndedNodeClaimFailed, nc.Status.NodeName)
	case !nom.initialized && nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized):
		nom.initialized = true
		nom.scheduled = podScheduledOrZero(nom.pod)
		// The pod's window starts when its room can take it.
		if until := now.Add(n.ttl); until.After(nom.until) {
			nom.until = until
		}
		if rejectedAfter(nom.rejectedSeen, nc) {
			// Probably tried with the node ready and rejected, but the
			// time is when the model saw the rejection, not when
			// kube-scheduler made it: the pod keeps its room for a
			// grace, in which a rejection made on the tainted node is
			// followed by kube-scheduler's retry on the ready one.
			if grace := now.Add(RejectionGrace); grace.Before(nom.until) {
				nom.until = grace
			}
		}
	}
}

// nodeClaimGoneLocked ends the nominations to the deleted NodeClaim name.
func (n *Nominations) nodeClaimGoneLocked(name string) {
	for pod, nom := range n.byPod {
		if nom.nodeClaim == name {
			n.endLocked(pod, nom, EndedNodeClaimGone, "")
		}
	}
}

// podChangedLocked applies a pod's new version: a bound or terminal pod
// loses its nomination; a pending one's nomination keeps the new version
// (own hands it over), notes a new rejection by kube-scheduler, and ends
// when the rejection came after its node initialised.
func (n *Nominations) podChangedLocked(key types.NamespacedName, p *corev1.Pod, settled bool, own func() *corev1.Pod) {
	if settled {
		delete(n.byPod, key)
		return
	}
	nom, ok := n.byPod[key]
	if !ok {
		return
	}
	if rejectedSince(p, podScheduledOrZero(nom.pod)) {
		nom.rejectedSeen = n.c.opts.Clock.Now()
	}
	nom.pod = own()
	if nom.initialized && rejectedSince(p, nom.scheduled) {
		n.endLocked(key, nom, EndedNodeFilledUp, n.c.nodeNameLocked(nom.nodeClaim))
	}
}

// podGoneLocked forgets a deleted pod's nomination and written value.
func (n *Nominations) podGoneLocked(key types.NamespacedName) {
	delete(n.byPod, key)
	delete(n.written, key)
}

// live reports whether the nomination still holds at now (see liveUntil).
func (n *nomination) live(now time.Time) bool {
	return now.Before(n.liveUntil())
}

// liveUntil is when the nomination stops holding if nothing changes: the
// end of its window, or for a NodeClaim whose node has not initialised
// yet, MaxNominationHold after the plan if that is later (see
// Nominations.Nominate).
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

// endLocked ends the nomination of pod and records why.
func (n *Nominations) endLocked(pod types.NamespacedName, nom *nomination, reason, node string) {
	delete(n.byPod, pod)
	n.ended = append(n.ended, EndedNomination{Pod: nom.pod.DeepCopy(), NodeClaim: nom.nodeClaim, Node: node, Reason: reason})
	if n.onEnded != nil {
		n.onEnded(nom.pod)
	}
	// Bounded: a provisioner that stopped taking them (not the leader)
	// keeps only the latest.
	if len(n.ended) > maxEnded {
		n.ended = append([]EndedNomination(nil), n.ended[len(n.ended)-maxEnded:]...)
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

// nominatedLocked gathers the live nominations of e's NodeClaim, by
// NodeClaim name, for stateNodeLocked.
func (c *Cluster) nominatedLocked(e *entry, now time.Time) map[string][]*corev1.Pod {
	if e.nodeClaim == nil {
		return nil
	}
	return c.nom.liveByNodeClaimLocked(now, e.nodeClaim.Name)
}
