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
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/pods"
)

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
	// trusted while no informer event has confirmed it; past it, Synced's
	// list from the API server decides whether it still exists (default
	// DefaultCreatedTTL).
	CreatedTTL time.Duration
}

// DefaultCreatedTTL is how long the model trusts a NodeClaim its creator
// recorded (NodeClaimCreated) without the informer confirming it, before
// it asks the API server: far longer than an informer round trip and than
// a list's latency, so a list that began past it was served after the
// NodeClaim was created.
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
	// nom are the provisioner's nominations (their fields are guarded
	// by mu too).
	nom *Nominations
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
	// retired are the names of NodeClaims seen being deleted or gone (see
	// NodeClaimNameRetired); it has its own lock.
	retired *cache.LRUExpireCache
	// generation counts mutations.
	generation uint64

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

// NewCluster validates opts and returns an empty model.
func NewCluster(opts Options) (*Cluster, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		opts:          opts,
		entries:       map[string]*entry{},
		nodeKeys:      map[string]string{},
		nodeClaimKeys: map[string]string{},
		podsByNode:    map[string]map[types.NamespacedName]*corev1.Pod{},
		podNode:       map[types.NamespacedName]string{},
		daemonSets:    map[types.NamespacedName]*corev1.Pod{},
		volumeLimits:  map[string]map[string]int{},
		marked:        map[string]bool{},
		created:       map[string]time.Time{},
		retired:       cache.NewLRUExpireCacheWithClock(retiredNames, opts.Clock),
	}
	c.nom = newNominations(c, opts.NominationTTL)
	return c, nil
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

// retiredNames and retiredNameTTL bound the record of retired NodeClaim
// names. A name comes back only when the same plan is made again after its
// NodeClaim went away: the same pending pods planned again (provisioning),
// or the same candidates replaced by the same pods after a rollback; both
// follow within minutes, so a day is ample, and 100,000 names (a few MiB)
// hold a day of any cluster's churn.
const (
	retiredNames   = 100_000
	retiredNameTTL = 24 * time.Hour
)

// NodeClaimNameRetired reports whether the model saw a NodeClaim of this
// name being deleted or gone (in the last retiredNameTTL): the
// NodeClaim creator never gives such a name to a new NodeClaim, which
// would read as the old one come back. What was deleted before this
// process started is unknown to it; names derived from UIDs
// (nodeclaims.ReplacementName) keep replacements apart from those.
func (c *Cluster) NodeClaimNameRetired(name string) bool {
	_, ok := c.retired.Get(name)
	return ok
}

// retire records name as retired.
func (c *Cluster) retire(name string) {
	c.retired.Add(name, struct{}{}, retiredNameTTL)
}

// UpdateNodeClaim records the latest version of a NodeClaim.
func (c *Cluster) UpdateNodeClaim(nc *v1.NodeClaim) {
	c.updateNodeClaim(nc.DeepCopy())
}

// updateNodeClaim records nc itself, handed over as updateNode's Node is.
func (c *Cluster) updateNodeClaim(nc *v1.NodeClaim) {
	key := nodeClaimKey(nc)
	if nc.DeletionTimestamp != nil {
		c.retire(nc.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.nodeClaimKeys[nc.Name]; ok && old != key {
		c.detachLocked(old, func(e *entry) { e.nodeClaim = nil })
	}
	c.entryLocked(key).nodeClaim = nc
	c.nodeClaimKeys[nc.Name] = key
	delete(c.created, nc.Name)
	c.nom.nodeClaimChangedLocked(nc)
	c.changedLocked()
}

// NodeClaimCreated records a NodeClaim its creator (the provisioner) has
// just written, so the next batch counts it and the pods nominated to it
// before the informer delivers it: there is one model of in-flight
// capacity, this one. A NodeClaim the model already holds is left as it
// is (what the informer delivered is at least as new). The record stays
// until an informer event confirms it or the NodeClaim is shown gone: by
// the informer, or, for one deleted before its first event reached the
// model (a re-list can skip both its events), by Synced's list from the
// API server once the record is older than Options.CreatedTTL. An informer
// slow to deliver never makes the model forget a NodeClaim the API server
// holds: its pods would be planned again and launched twice (as Karpenter
// keeps the NodeClaims its provisioner created until its informer sees
// them or their deletion).
func (c *Cluster) NodeClaimCreated(nc *v1.NodeClaim) {
	nc = nc.DeepCopy()
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.nodeClaimKeys[nc.Name]; ok {
		return
	}
	key := nodeClaimKey(nc)
	c.entryLocked(key).nodeClaim = nc
	c.nodeClaimKeys[nc.Name] = key
	c.created[nc.Name] = now
	c.changedLocked()
}

// DeleteNodeClaim forgets a NodeClaim and the nominations to it.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteNodeClaimLocked(name)
}

func (c *Cluster) deleteNodeClaimLocked(name string) {
	c.retire(name)
	delete(c.created, name)
	if key, ok := c.nodeClaimKeys[name]; ok {
		c.detachLocked(key, func(e *entry) { e.nodeClaim = nil })
		delete(c.nodeClaimKeys, name)
	}
	c.nom.nodeClaimGoneLocked(name)
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
	// A pending pod is not stored above: p is taken once at most.
	c.nom.podChangedLocked(key, p, p.Spec.NodeName != "" || terminal, own)
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
	c.nom.podGoneLocked(key)
	c.changedLocked()
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
	nominated := c.nom.liveByNodeClaimLocked(now, "")
	out := make([]*StateNode, 0, len(c.entries))
	for key, e := range c.entries {
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
		if key, ok = c.nodeClaimKeys[name]; !ok {
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
