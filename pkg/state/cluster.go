package state

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/pods"
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

// Options configure a Cluster.
type Options struct {
	// Reader lists Nodes and NodeClaims for Synced. Pass the manager's
	// GetAPIReader() so Synced compares against the API server itself
	// (required).
	Reader client.Reader
	// Clock stamps nominations (default: the real clock).
	Clock clock.PassiveClock
	// NominationTTL is the nomination window (default
	// DefaultNominationTTL).
	NominationTTL time.Duration
	// SyncedRecheckInterval is how long a positive Synced result is reused
	// before Synced lists from the API server again (default
	// DefaultSyncedRecheckInterval).
	SyncedRecheckInterval time.Duration
	// CreatedTTL is how long a NodeClaim recorded by NodeClaimCreated is
	// kept while no informer event has confirmed it (default
	// DefaultCreatedTTL).
	CreatedTTL time.Duration
}

// DefaultCreatedTTL is how long the model keeps a NodeClaim its creator
// recorded (NodeClaimCreated) without the informer confirming it: far
// longer than an informer round trip, short enough that a NodeClaim
// deleted before its first event reached the model does not linger.
const DefaultCreatedTTL = 30 * time.Second

// DefaultSyncedRecheckInterval is how long Synced trusts a positive check
// when Options leaves it unset: between checks the informers keep the model
// current, and a periodic re-list catches a model that fell behind.
const DefaultSyncedRecheckInterval = 30 * time.Second

// Validate checks the options and fills defaults.
func (o *Options) Validate() error {
	if o.Reader == nil {
		return errors.New("state: Options.Reader is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.NominationTTL < 0 {
		return errors.New("state: Options.NominationTTL must not be negative")
	}
	if o.NominationTTL == 0 {
		o.NominationTTL = DefaultNominationTTL
	}
	if o.SyncedRecheckInterval < 0 {
		return errors.New("state: Options.SyncedRecheckInterval must not be negative")
	}
	if o.SyncedRecheckInterval == 0 {
		o.SyncedRecheckInterval = DefaultSyncedRecheckInterval
	}
	if o.CreatedTTL < 0 {
		return errors.New("state: Options.CreatedTTL must not be negative")
	}
	if o.CreatedTTL == 0 {
		o.CreatedTTL = DefaultCreatedTTL
	}
	return nil
}

// Cluster is the in-memory model. Create it with NewCluster and feed it by
// calling Register on the manager (or, in unit tests, the Update*/Delete*
// methods directly).
type Cluster struct {
	opts Options

	// mu guards every field below. See the package doc for the discipline.
	mu sync.RWMutex
	// entries joins a Node and its NodeClaim, keyed by provider ID, or by
	// "node/<name>" / "nodeclaim/<name>" while the provider ID is unknown.
	entries map[string]*entry
	// nodeKeys and nodeClaimKeys map object names to their entry key.
	nodeKeys      map[string]string
	nodeClaimKeys map[string]string
	// podsByNode holds the bound, non-terminal pods per node name; podNode
	// is the reverse map.
	podsByNode map[string]map[types.NamespacedName]*corev1.Pod
	podNode    map[types.NamespacedName]string
	// nominations are pods the provisioner nominated to in-flight
	// NodeClaims, by pod.
	nominations map[types.NamespacedName]*nomination
	// ended are the nominations that ended early (their node filled up,
	// their NodeClaim failed or went away), in order, until TakeEnded
	// hands them to the provisioner to tell the pods.
	ended []EndedNomination
	// nominatedNodeNames are the pods whose status.nominatedNodeName
	// joiner wrote, with the node name it wrote: joiner owns the field for
	// these pods only.
	nominatedNodeNames map[types.NamespacedName]string
	// daemonSets holds one pod per DaemonSet, built from its template.
	daemonSets map[types.NamespacedName]*corev1.Pod
	// volumeLimits is each node's CSI attach limit per driver, from its
	// CSINode.
	volumeLimits map[string]map[string]int
	// marked are provider IDs marked for deletion by a consumer.
	marked map[string]bool
	// created are NodeClaims recorded by NodeClaimCreated that no informer
	// event has confirmed yet, by name, with when they were recorded.
	created map[string]time.Time
	// generation counts mutations.
	generation uint64
	// onEnded is called with the pod of each nomination that ends early
	// (see NotifyNominationEnded); nil until set.
	onEnded func(*corev1.Pod)

	// syncMu serializes Synced's checks so concurrent callers share one;
	// it guards syncedAt, which is when the last check found the model
	// synced (zero: not synced, or never checked).
	syncMu   sync.Mutex
	syncedAt time.Time
	// unsyncedSince is when checks started failing (zero while synced),
	// for karpenter_cluster_state_unsynced_time_seconds.
	unsyncedSince time.Time
}

// entry is one tracked node: a Node, a NodeClaim or both.
type entry struct {
	node      *corev1.Node
	nodeClaim *v1.NodeClaim
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

// NewCluster validates opts and returns an empty model.
func NewCluster(opts Options) (*Cluster, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Cluster{
		opts:               opts,
		entries:            map[string]*entry{},
		nodeKeys:           map[string]string{},
		nodeClaimKeys:      map[string]string{},
		podsByNode:         map[string]map[types.NamespacedName]*corev1.Pod{},
		podNode:            map[types.NamespacedName]string{},
		nominations:        map[types.NamespacedName]*nomination{},
		nominatedNodeNames: map[types.NamespacedName]string{},
		daemonSets:         map[types.NamespacedName]*corev1.Pod{},
		volumeLimits:       map[string]map[string]int{},
		marked:             map[string]bool{},
		created:            map[string]time.Time{},
	}, nil
}

func nodeKey(n *corev1.Node) string {
	if n.Spec.ProviderID != "" {
		return n.Spec.ProviderID
	}
	return "node/" + n.Name
}

func nodeClaimKey(nc *v1.NodeClaim) string {
	if nc.Status.ProviderID != "" {
		return nc.Status.ProviderID
	}
	return "nodeclaim/" + nc.Name
}

// UpdateNode records the latest version of a Node.
func (c *Cluster) UpdateNode(n *corev1.Node) {
	c.updateNode(n.DeepCopy())
}

// updateNode records n itself: the caller hands it over and nobody changes
// it afterwards (UpdateNode's copy, or the state.node reconciler's Node,
// which shares its fields with the informer cache's).
func (c *Cluster) updateNode(n *corev1.Node) {
	key := nodeKey(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodeKeys[n.Name]; ok && old != key {
		c.detachLocked(old, func(e *entry) { e.node = nil })
	}
	c.entryLocked(key).node = n
	c.nodeKeys[n.Name] = key
	c.changedLocked()
}

// DeleteNode forgets a Node and the pods bound to it.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key, ok := c.nodeKeys[name]; ok {
		c.detachLocked(key, func(e *entry) { e.node = nil })
		delete(c.nodeKeys, name)
	}
	for pod := range c.podsByNode[name] {
		delete(c.podNode, pod)
	}
	delete(c.podsByNode, name)
	c.changedLocked()
}

// UpdateNodeClaim records the latest version of a NodeClaim.
func (c *Cluster) UpdateNodeClaim(nc *v1.NodeClaim) {
	c.updateNodeClaim(nc.DeepCopy())
}

// updateNodeClaim records nc itself, handed over as updateNode's Node is.
func (c *Cluster) updateNodeClaim(nc *v1.NodeClaim) {
	key := nodeClaimKey(nc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodeClaimKeys[nc.Name]; ok && old != key {
		c.detachLocked(old, func(e *entry) { e.nodeClaim = nil })
	}
	c.entryLocked(key).nodeClaim = nc
	c.nodeClaimKeys[nc.Name] = key
	delete(c.created, nc.Name)
	c.nodeClaimChangedLocked(nc)
	c.changedLocked()
}

// NodeClaimCreated records a NodeClaim its creator (the provisioner) has
// just written, so the next batch counts it and the pods nominated to it
// before the informer delivers it: there is one model of in-flight
// capacity, this one. A NodeClaim the model already holds is left as it
// is (what the informer delivered is at least as new). Until an informer
// event confirms it, the NodeClaim is dropped after Options.CreatedTTL, so
// one deleted before its first event reached the model cannot linger.
func (c *Cluster) NodeClaimCreated(nc *v1.NodeClaim) {
	nc = nc.DeepCopy()
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireCreatedLocked(now)
	if _, ok := c.nodeClaimKeys[nc.Name]; ok {
		return
	}
	key := nodeClaimKey(nc)
	c.entryLocked(key).nodeClaim = nc
	c.nodeClaimKeys[nc.Name] = key
	c.created[nc.Name] = now
	c.changedLocked()
}

// expireCreatedLocked forgets the NodeClaims NodeClaimCreated recorded
// that no informer event confirmed within Options.CreatedTTL.
func (c *Cluster) expireCreatedLocked(now time.Time) {
	for name, at := range c.created {
		if now.Sub(at) > c.opts.CreatedTTL {
			c.deleteNodeClaimLocked(name)
		}
	}
}

// DeleteNodeClaim forgets a NodeClaim and the nominations to it.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteNodeClaimLocked(name)
}

func (c *Cluster) deleteNodeClaimLocked(name string) {
	delete(c.created, name)
	if key, ok := c.nodeClaimKeys[name]; ok {
		c.detachLocked(key, func(e *entry) { e.nodeClaim = nil })
		delete(c.nodeClaimKeys, name)
	}
	for pod, n := range c.nominations {
		if n.nodeClaim == name {
			c.endLocked(pod, n, EndedNodeClaimGone, "")
		}
	}
	c.changedLocked()
}

// UpdatePod records a pod: bound, non-terminal pods count on their node;
// a pod that is bound or gone loses its nomination.
func (c *Cluster) UpdatePod(p *corev1.Pod) {
	c.updatePod(p, false)
}

// updatePod is UpdatePod; owned says the caller hands p over and nobody
// changes it afterwards (the state.pod reconciler's pod, which shares its
// fields with the informer cache's), so the model keeps p itself instead
// of a deep copy.
func (c *Cluster) updatePod(p *corev1.Pod, owned bool) {
	own := func() *corev1.Pod {
		if owned {
			return p
		}
		return p.DeepCopy()
	}
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	terminal := pods.IsTerminal(p)
	var stored *corev1.Pod
	if p.Spec.NodeName != "" && !terminal {
		stored = own()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unbindLocked(key)
	if p.Spec.NodeName != "" || terminal {
		delete(c.nominations, key)
	} else if n, ok := c.nominations[key]; ok {
		if rejectedSince(p, podScheduledOrZero(n.pod)) {
			n.rejectedSeen = c.opts.Clock.Now()
		}
		// Not bound, so not stored above: p is taken once at most.
		n.pod = own()
		if n.initialized && rejectedSince(p, n.scheduled) {
			c.endLocked(key, n, EndedNodeFilledUp, c.nodeNameLocked(n.nodeClaim))
		}
	}
	if stored != nil {
		pods := c.podsByNode[stored.Spec.NodeName]
		if pods == nil {
			pods = map[types.NamespacedName]*corev1.Pod{}
			c.podsByNode[stored.Spec.NodeName] = pods
		}
		pods[key] = stored
		c.podNode[key] = stored.Spec.NodeName
	}
	c.changedLocked()
}

// DeletePod forgets a pod.
func (c *Cluster) DeletePod(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unbindLocked(key)
	delete(c.nominations, key)
	delete(c.nominatedNodeNames, key)
	c.changedLocked()
}

// UpdateDaemonSetPod records the pod a DaemonSet would put on a new node.
func (c *Cluster) UpdateDaemonSetPod(daemonSet types.NamespacedName, pod *corev1.Pod) {
	pod = pod.DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.daemonSets[daemonSet] = pod
	c.changedLocked()
}

// DeleteDaemonSet forgets a DaemonSet.
func (c *Cluster) DeleteDaemonSet(daemonSet types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.daemonSets, daemonSet)
	c.changedLocked()
}

// UpdateVolumeLimits records a node's CSI attach limits (driver → volumes),
// as its CSINode reports them; nil forgets them.
func (c *Cluster) UpdateVolumeLimits(nodeName string, limits map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limits == nil {
		delete(c.volumeLimits, nodeName)
	} else {
		c.volumeLimits[nodeName] = maps.Clone(limits)
	}
	c.changedLocked()
}

// MarkForDeletion marks the nodes with these provider IDs as about to be
// deleted: they take no new pods in simulations. Deleting Nodes and
// NodeClaims are marked without calling this.
func (c *Cluster) MarkForDeletion(providerIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range providerIDs {
		c.marked[id] = true
	}
	c.changedLocked()
}

// UnmarkForDeletion undoes MarkForDeletion (e.g. a disruption was
// abandoned).
func (c *Cluster) UnmarkForDeletion(providerIDs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range providerIDs {
		delete(c.marked, id)
	}
	c.changedLocked()
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

// Generation increases on every change to the model; consumers can compare
// two readings to tell whether anything changed in between.
func (c *Cluster) Generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.generation
}

// Nodes returns a copy of every tracked node, ordered by name.
func (c *Cluster) Nodes() []*StateNode {
	return c.nodes(true)
}

// ReadOnlyNodes is Nodes without the copies: the StateNodes are new, but
// their Node, NodeClaim and pods are the model's own (which share their
// fields with the informer cache's objects), so the caller must not change
// them. It is for readers that look at every pod of the
// cluster (the provisioner's batch, disruption's poll, metrics): at 10,000
// pods a copy of them all is tens of MiB of garbage per call. The model
// never changes an object it holds; an update replaces it.
func (c *Cluster) ReadOnlyNodes() []*StateNode {
	return c.nodes(false)
}

func (c *Cluster) nodes(deep bool) []*StateNode {
	now := c.opts.Clock.Now()
	c.mu.RLock()
	// The live nominations by NodeClaim, gathered once rather than once
	// per NodeClaim.
	nominated := map[string][]*corev1.Pod{}
	for _, n := range c.nominations {
		if n.live(now) {
			nominated[n.nodeClaim] = append(nominated[n.nodeClaim], n.pod)
		}
	}
	out := make([]*StateNode, 0, len(c.entries))
	for key, e := range c.entries {
		if c.expiredLocked(e, now) {
			continue
		}
		out = append(out, c.stateNodeLocked(key, e, nominated, deep))
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name() != out[j].Name() {
			return out[i].Name() < out[j].Name()
		}
		return out[i].ProviderID() < out[j].ProviderID()
	})
	return out
}

// NodeByName returns a copy of the StateNode whose Node, or (for an
// unregistered NodeClaim) whose NodeClaim, has this name.
func (c *Cluster) NodeByName(name string) (*StateNode, bool) {
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	key, ok := c.nodeKeys[name]
	if !ok {
		if key, ok = c.nodeClaimKeys[name]; !ok || c.expiredLocked(c.entries[key], now) {
			return nil, false
		}
	}
	return c.stateNodeLocked(key, c.entries[key], c.nominatedLocked(c.entries[key], now), true), true
}

// NodeByProviderID returns a copy of the StateNode with this provider ID.
func (c *Cluster) NodeByProviderID(providerID string) (*StateNode, bool) {
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[providerID]
	if !ok {
		return nil, false
	}
	return c.stateNodeLocked(providerID, e, c.nominatedLocked(e, now), true), true
}

// DaemonSetPods returns one pod per DaemonSet, built from its template,
// ordered by DaemonSet.
func (c *Cluster) DaemonSetPods() []*corev1.Pod {
	c.mu.RLock()
	keys := make([]types.NamespacedName, 0, len(c.daemonSets))
	for k := range c.daemonSets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]*corev1.Pod, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.daemonSets[k].DeepCopy())
	}
	c.mu.RUnlock()
	return out
}

// expiredLocked reports whether e is only a NodeClaim recorded by
// NodeClaimCreated that its informer did not confirm in time (dropped at
// the next write; readers skip it already).
func (c *Cluster) expiredLocked(e *entry, now time.Time) bool {
	if e.node != nil || e.nodeClaim == nil {
		return false
	}
	at, ok := c.created[e.nodeClaim.Name]
	return ok && now.Sub(at) > c.opts.CreatedTTL
}

// entryLocked returns the entry for key, creating it.
func (c *Cluster) entryLocked(key string) *entry {
	e, ok := c.entries[key]
	if !ok {
		e = &entry{}
		c.entries[key] = e
	}
	return e
}

// detachLocked clears part of the entry at key and drops it when empty.
func (c *Cluster) detachLocked(key string, clear func(*entry)) {
	e, ok := c.entries[key]
	if !ok {
		return
	}
	clear(e)
	if e.node == nil && e.nodeClaim == nil {
		delete(c.entries, key)
		delete(c.marked, key)
	}
}

func (c *Cluster) unbindLocked(key types.NamespacedName) {
	node, ok := c.podNode[key]
	if !ok {
		return
	}
	delete(c.podNode, key)
	if pods := c.podsByNode[node]; pods != nil {
		delete(pods, key)
		if len(pods) == 0 {
			delete(c.podsByNode, node)
		}
	}
}

func (c *Cluster) changedLocked() {
	c.generation++
	metrics.ClusterStateNodeCount.Set(float64(len(c.entries)))
}

// copyIf returns a deep copy of o when deep, else o itself.
func copyIf[T interface{ DeepCopy() T }](deep bool, o T) T {
	if deep {
		return o.DeepCopy()
	}
	return o
}

// byPodKey orders pods by namespace, then name (without building a
// "namespace/name" string per comparison).
func byPodKey(a, b *corev1.Pod) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
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

// stateNodeLocked builds the StateNode of the entry at key, with the pods
// nominated to its NodeClaim from nominated; deep copies the objects,
// otherwise they are the model's own (ReadOnlyNodes).
func (c *Cluster) stateNodeLocked(key string, e *entry, nominated map[string][]*corev1.Pod, deep bool) *StateNode {
	sn := &StateNode{MarkedForDeletion: c.goingAwayLocked(key, e)}
	if e.node != nil {
		sn.Node = copyIf(deep, e.node)
		sn.VolumeLimits = maps.Clone(c.volumeLimits[e.node.Name])
		for _, p := range c.podsByNode[e.node.Name] {
			sn.Pods = append(sn.Pods, copyIf(deep, p))
		}
		slices.SortFunc(sn.Pods, byPodKey)
	}
	if e.nodeClaim != nil {
		sn.NodeClaim = copyIf(deep, e.nodeClaim)
		for _, p := range nominated[e.nodeClaim.Name] {
			sn.NominatedPods = append(sn.NominatedPods, copyIf(deep, p))
		}
		slices.SortFunc(sn.NominatedPods, byPodKey)
	}
	return sn
}

// goingAwayLocked reports whether the entry at key is marked for deletion
// by a consumer, or its Node or NodeClaim is being deleted: a StateNode's
// MarkedForDeletion, and what ends HoldsNomination.
func (c *Cluster) goingAwayLocked(key string, e *entry) bool {
	return c.marked[key] ||
		(e.node != nil && e.node.DeletionTimestamp != nil) ||
		(e.nodeClaim != nil && e.nodeClaim.DeletionTimestamp != nil)
}
