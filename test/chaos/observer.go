package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The observer knows joiner only from the outside: the Kubernetes API
// (Karpenter's published names) and the simulated cloud's inventory file
// with its documented tags. It imports none of joiner's packages, so a bug
// shared by joiner's code and its own tests cannot hide here.

// Tags the simulated cloud writes on its instances (see the sim provider's
// documentation); the observer reads them as any inventory tool would.
const (
	simTagCluster      = "sim.joiner.dev/cluster"
	simTagClusterID    = "sim.joiner.dev/cluster-id"
	simTagNodeClaimUID = "sim.joiner.dev/nodeclaim-uid"
	tagNodeClaim       = "karpenter.sh/nodeclaim"
	stateTerminated    = "terminated"

	taintUnregistered      = "karpenter.sh/unregistered"
	annotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	labelNodePool          = "karpenter.sh/nodepool"
)

var nodeClaimsGVR = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// CloudInstance is one instance as the cloud's own inventory lists it.
type CloudInstance struct {
	ID         string            `json:"id"`
	Zone       string            `json:"zone"`
	State      string            `json:"state"`
	LaunchTime time.Time         `json:"launchTime"`
	Tags       map[string]string `json:"tags"`
}

// Cloud is how the observer reads a cloud: its inventory, the tags that
// name an instance's cluster (name and unique id) and its NodeClaim, and
// which states mean the instance is gone.
type Cloud struct {
	Name string
	// Instances lists every instance the cloud knows, gone ones included.
	Instances func(ctx context.Context) (map[string]CloudInstance, error)
	// ClusterTag and ClusterIDTag name the owning cluster; NodeClaimTag
	// the NodeClaim an instance was launched for (one live instance each).
	ClusterTag, ClusterIDTag, NodeClaimTag string
	// GoneStates are the states of an instance that no longer runs.
	GoneStates []string
	// SampleEvery is how often the instant checks read the inventory.
	SampleEvery time.Duration
}

// owns reports whether id's cluster launched inst.
func (c Cloud) owns(id Identity, inst CloudInstance) bool {
	return inst.Tags[c.ClusterTag] == id.Name && inst.Tags[c.ClusterIDTag] == id.ID
}

func (c Cloud) gone(inst CloudInstance) bool { return slices.Contains(c.GoneStates, inst.State) }

// Live returns the instances id's cluster owns that still run.
func (c Cloud) Live(ctx context.Context, id Identity) (map[string]CloudInstance, error) {
	inv, err := c.Instances(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]CloudInstance{}
	for k, inst := range inv {
		if c.owns(id, inst) && !c.gone(inst) {
			out[k] = inst
		}
	}
	return out, nil
}

// SimCloud reads the simulated cloud's inventory file. The file is
// replaced atomically (rename), so a plain read sees a whole version.
func SimCloud(store string) Cloud {
	return Cloud{
		Name: "sim",
		Instances: func(context.Context) (map[string]CloudInstance, error) {
			b, err := os.ReadFile(store)
			if err != nil {
				if os.IsNotExist(err) {
					return map[string]CloudInstance{}, nil
				}
				return nil, fmt.Errorf("reading the cloud inventory %s: %w", store, err)
			}
			var f struct {
				Instances map[string]CloudInstance `json:"instances"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				return nil, fmt.Errorf("decoding the cloud inventory %s: %w", store, err)
			}
			return f.Instances, nil
		},
		ClusterTag: simTagCluster, ClusterIDTag: simTagClusterID, NodeClaimTag: simTagNodeClaimUID,
		GoneStates:  []string{stateTerminated},
		SampleEvery: 300 * time.Millisecond,
	}
}

// Identity is a cluster as its instances' tags name it.
type Identity struct{ Name, ID string }

// ClusterIdentity reads a cluster's unique id, the UID of kube-system.
func ClusterIdentity(ctx context.Context, cfg *rest.Config, name string) (Identity, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Identity{}, err
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return Identity{}, fmt.Errorf("reading kube-system: %w", err)
	}
	return Identity{Name: name, ID: string(ns.UID)}, nil
}

// ObserverOptions say what the observer watches.
type ObserverOptions struct {
	Config *rest.Config
	// Cloud is the cloud's own inventory.
	Cloud Cloud
	// Cluster is the cluster under test; Foreign the other cluster sharing
	// the cloud (and the name), whose instances must never be touched.
	Cluster, Foreign Identity
	// Namespace holds the workload; NodePool names the cluster's nodes.
	Namespace, NodePool string
}

// Observer watches a cluster and its cloud while faults are injected and
// records every broken promise. Violations are sticky: once seen, a
// violation is reported at the end of the round even if the state healed.
type Observer struct {
	opts ObserverOptions
	kube kubernetes.Interface
	dyn  dynamic.Interface

	mu         sync.Mutex
	violations []string
	notes      []string
	seen       map[string]bool // violations already recorded
	// judging counts judgements running in the background (a deletion
	// the pod watch missed waits for the pod's events); Violations and
	// Notes wait on judged until none is left.
	judging int
	judged  *sync.Cond
	// missed are the deletions the pod watch missed that wait for the
	// pod's events (observer_missed.go); one goroutine polls for them all
	// while there are any.
	missed []*missedDeletion
	// polling is whether a pollMissedDeletions runs: it is cleared only
	// when the poller leaves, so a pod missed while the poller judges (its
	// list already emptied) joins it instead of starting a second one.
	polling bool
	// foreign is the other cluster's live instances when Start ran.
	foreign map[string]CloudInstance
	// evicted are pods whose eviction was already judged.
	evicted map[string]bool
	// dnd maps a node to its running do-not-disrupt pods.
	dnd map[string][]string
	// allowed: node deletions the harness itself makes (teardown).
	allowed map[string]bool
	// replaced records disrupted NodeClaims whose deletion began, and
	// replaceDecisions the NodeClaims a replace decision took, with its
	// event's message (observer_replace.go).
	replaced         map[types.UID]replaceRecord
	replaceDecisions map[types.UID]string

	// podView is the namespace's pods as the pod handler has seen them so
	// far: the API server's order, up to the event being judged. The
	// informer's cache runs ahead of its handler (a hundred deletions of a
	// scale-down take the handler seconds to judge), so a judgement made
	// from the cache counts what happened after the deletion it judges.
	podView map[types.UID]*corev1.Pod
	// unboundAt is, per pod, the resourceVersion at which the pod handler
	// last saw it without a node, and nodeGoneAt, per Node name, the
	// resourceVersion of the Node's deletion as its watch delivered it
	// (never a tombstone's, which is older). Both are etcd revisions, one
	// sequence for the whole API server, so a pod seen unbound after its
	// node's deletion was bound to a node that no longer existed.
	unboundAt  map[types.UID]uint64
	nodeGoneAt map[string]uint64

	pods       cache.Indexer
	nodes      cache.Indexer
	nodeClaims cache.Indexer
}

// NewObserver connects to the cluster.
func NewObserver(opts ObserverOptions) (*Observer, error) {
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	o := &Observer{opts: opts, kube: kube, dyn: dyn, seen: map[string]bool{}, evicted: map[string]bool{},
		dnd: map[string][]string{}, allowed: map[string]bool{}, replaced: map[types.UID]replaceRecord{}, replaceDecisions: map[types.UID]string{},
		podView: map[types.UID]*corev1.Pod{}, unboundAt: map[types.UID]uint64{}, nodeGoneAt: map[string]uint64{}}
	o.judged = sync.NewCond(&o.mu)
	return o, nil
}

// Start records the foreign cluster's instances and watches pods, nodes
// and the cloud until ctx ends.
func (o *Observer) Start(ctx context.Context) error {
	var err error
	if o.foreign, err = o.opts.Cloud.Live(ctx, o.opts.Foreign); err != nil {
		return fmt.Errorf("observer: %w", err)
	}
	pods := informers.NewSharedInformerFactoryWithOptions(o.kube, 0, informers.WithNamespace(o.opts.Namespace))
	podInf := pods.Core().V1().Pods().Informer()
	_, _ = podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.onPod(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { o.onPod(obj.(*corev1.Pod)) },
		DeleteFunc: o.onPodDeleted,
	})
	nodes := informers.NewSharedInformerFactory(o.kube, 0)
	nodeInf := nodes.Core().V1().Nodes().Informer()
	_, _ = nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A Node registered again under a name (an IP-based AWS name
		// reused) is not the one deleted before.
		AddFunc: func(obj any) {
			o.mu.Lock()
			delete(o.nodeGoneAt, obj.(*corev1.Node).Name)
			o.mu.Unlock()
		},
		UpdateFunc: func(old, cur any) { o.onNodeUpdate(old.(*corev1.Node), cur.(*corev1.Node)) },
		DeleteFunc: func(obj any) { o.onNodeGone(ctx, obj) },
	})
	claims := dynamicinformer.NewDynamicSharedInformerFactory(o.dyn, 0)
	claimInf := claims.ForResource(nodeClaimsGVR).Informer()
	_, _ = claimInf.AddEventHandler(o.nodeClaimHandler())
	events := informers.NewSharedInformerFactoryWithOptions(o.kube, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = "reason=" + reasonDisruptionTerminate
	}))
	eventInf := events.Core().V1().Events().Informer()
	_, _ = eventInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.onDisruptionEvent(obj.(*corev1.Event)) },
		UpdateFunc: func(_, obj any) { o.onDisruptionEvent(obj.(*corev1.Event)) },
	})
	o.pods, o.nodes, o.nodeClaims = podInf.GetIndexer(), nodeInf.GetIndexer(), claimInf.GetIndexer()
	pods.Start(ctx.Done())
	nodes.Start(ctx.Done())
	claims.Start(ctx.Done())
	events.Start(ctx.Done())
	for _, synced := range []cache.InformerSynced{podInf.HasSynced, nodeInf.HasSynced, claimInf.HasSynced, eventInf.HasSynced} {
		if !cache.WaitForCacheSync(ctx.Done(), synced) {
			return fmt.Errorf("observer: caches did not sync")
		}
	}
	go func() {
		t := time.NewTicker(o.opts.Cloud.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				o.sampleCloud(ctx)
			}
		}
	}()
	return nil
}

func (o *Observer) violate(key, format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[key] {
		return
	}
	o.seen[key] = true
	o.violations = append(o.violations, time.Now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// Violations returns what went wrong so far.
func (o *Observer) Violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.judging > 0 {
		o.judged.Wait()
	}
	return slices.Clone(o.violations)
}

// AllowNodeDeletion exempts the harness's own teardown of a node.
func (o *Observer) AllowNodeDeletion(node string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.allowed[node] = true
}

// sampleCloud checks the invariants that must hold at every instant: one
// live instance per NodeClaim, and the foreign cluster's instances alive
// and unchanged.
func (o *Observer) sampleCloud(ctx context.Context) {
	c := o.opts.Cloud
	inv, err := c.Instances(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.violate("inventory", "the cloud inventory is unreadable: %v", err)
		}
		return
	}
	byClaim := map[string][]string{}
	for id, inst := range inv {
		if c.gone(inst) || !c.owns(o.opts.Cluster, inst) {
			continue
		}
		if claim := inst.Tags[c.NodeClaimTag]; claim != "" {
			byClaim[claim] = append(byClaim[claim], id)
		}
	}
	for claim, ids := range byClaim {
		if len(ids) > 1 {
			slices.Sort(ids)
			o.violate("dup/"+claim, "two live instances for one NodeClaim (%s=%s): %v", c.NodeClaimTag, claim, ids)
		}
	}
	for id, was := range o.foreign {
		now, ok := inv[id]
		switch {
		case !ok, c.gone(now):
			o.violate("foreign/"+id, "instance %s of the other cluster (%s/%s) was terminated", id, was.Tags[c.ClusterTag], was.Tags[c.ClusterIDTag])
		case !mapsEqual(now.Tags, was.Tags):
			o.violate("foreign-tags/"+id, "instance %s of the other cluster had its tags changed: %v -> %v", id, was.Tags, now.Tags)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// onPodDeleted judges a pod's deletion by its final state. A pod whose
// grace period is 0 goes in one step: no update shows its deletion first.
// A deletion the watch delivered carries the final state. A tombstone
// (cache.DeletedFinalStateUnknown) does not: the pod went while the watch
// was down (after a kube-apiserver restart the reflector re-lists, and a
// pod missing from the list is deleted with the last state the observer
// saw), so the tombstone holds a state from before the deletion, without
// the DisruptionTarget condition the deleter set first. Judged as a
// deletion without the Eviction API, it failed big sim round 2013: two
// pods kube-controller-manager's taint-eviction controller deleted in the
// second before the observer's watch came back. onMissedDeletion asks
// the pod's events instead (observer_missed.go).
func (o *Observer) onPodDeleted(obj any) {
	tomb, missed := obj.(cache.DeletedFinalStateUnknown)
	if missed {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case hasDisruptionTarget(p):
		// Judged by onPod when the condition came.
	case missed:
		o.onMissedDeletion(p)
	default:
		o.judgeDeletion(p)
	}
	o.mu.Lock()
	delete(o.podView, p.UID)
	delete(o.unboundAt, p.UID)
	o.mu.Unlock()
}

// onPod judges evictions against the pod's PDBs and tracks do-not-disrupt
// pods' nodes.
func (o *Observer) onPod(pod *corev1.Pod) {
	o.mu.Lock()
	o.podView[pod.UID] = pod
	if rv, err := strconv.ParseUint(pod.ResourceVersion, 10, 64); err == nil && pod.Spec.NodeName == "" {
		o.unboundAt[pod.UID] = rv
	}
	o.mu.Unlock()
	if pod.Annotations[annotationDoNotDisrupt] == "true" && pod.Spec.NodeName != "" {
		o.mu.Lock()
		running := pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
		list := slices.DeleteFunc(o.dnd[pod.Spec.NodeName], func(n string) bool { return n == pod.Name })
		if running {
			list = append(list, pod.Name)
		}
		o.dnd[pod.Spec.NodeName] = list
		o.mu.Unlock()
	}
	if pod.DeletionTimestamp != nil && !hasDisruptionTarget(pod) {
		o.judgeDeletion(pod)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue {
			continue
		}
		o.mu.Lock()
		judged := o.evicted[pod.Name]
		o.evicted[pod.Name] = true
		o.mu.Unlock()
		if judged {
			return
		}
		switch c.Reason {
		case "EvictionByEvictionAPI":
			o.judgeEviction(pod)
		case "DeletionByPodGC":
			if o.hasPDB(pod) {
				o.judgeOrphaned(pod, c)
			}
		case "DeletionByTaintManager":
			if o.hasPDB(pod) {
				o.judgeTaintEviction(pod, c)
			}
		}
	}
}

// judgeOrphaned judges a pod under a PDB that kube-controller-manager's
// pod garbage collector removed because its node no longer exists. A node
// released with the pod on it is a violation: it went before it was
// drained. A pod the observer saw unbound after its node's deletion was
// bound by kube-scheduler to a node that no longer existed (the Binding
// API does not check the node; after a kube-apiserver restart the
// scheduler's Node watch comes back on its own backoff and its cache can
// hold a deleted Node for seconds): no autoscaler can drain a pod onto a
// node that is already gone, so it is noted, not held against joiner.
func (o *Observer) judgeOrphaned(pod *corev1.Pod, c corev1.PodCondition) {
	o.mu.Lock()
	unbound, seenUnbound := o.unboundAt[pod.UID]
	gone, seenGone := o.nodeGoneAt[pod.Spec.NodeName]
	o.mu.Unlock()
	when := fmt.Sprintf("pod last seen without a node: %s; the node's deletion: %s", rvString(unbound, seenUnbound), rvString(gone, seenGone))
	if seenUnbound && seenGone && unbound > gone {
		o.note("pod %s under a PDB was removed by the pod garbage collector (%s): kube-scheduler bound it to node %s after the node was deleted (%s)",
			pod.Name, c.Message, pod.Spec.NodeName, when)
		return
	}
	o.violate("forced/"+pod.Name, "pod %s under a PDB was removed without eviction (%s: %s): its node went away before it was drained (node %s: %s; %s)",
		pod.Name, c.Reason, c.Message, pod.Spec.NodeName, o.nodeTaints(pod.Spec.NodeName), when)
}

func rvString(rv uint64, seen bool) string {
	if !seen {
		return "not seen"
	}
	return "resourceVersion " + strconv.FormatUint(rv, 10)
}

// judgeTaintEviction judges a pod under a PDB that kube-controller-manager's
// taint-eviction controller deleted, by the taints its Node carries in the
// API server now. That controller acts on its own informers' view: after a
// kube-apiserver restart each of its watches comes back on its own
// backoff, and when the Pod watch is back before the Node watch it sees
// pods kube-scheduler bound to a new node while, for it, the node still
// carries the karpenter.sh/unregistered:NoExecute taint it registered with
// and that the autoscaler has since removed: it deletes them at once (no
// toleration). That is Kubernetes' race, met by any autoscaler that
// removes the taint as Karpenter does, and it is noted, not held against
// joiner. A deletion for a taint the Node does carry (one the pod does not
// tolerate, or tolerates only for a while, as unreachable) is a
// violation; a taint joiner puts back is judged by onNodeUpdate.
func (o *Observer) judgeTaintEviction(pod *corev1.Pod, c corev1.PodCondition) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node, err := o.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		o.violate("forced/"+pod.Name, "pod %s under a PDB was removed without eviction (%s: %s) from node %s, which the observer could not read (%v; its cache: %s)",
			pod.Name, c.Reason, c.Message, pod.Spec.NodeName, err, o.nodeTaints(pod.Spec.NodeName))
		return
	}
	if causes := evictingTaints(pod, node); len(causes) > 0 {
		o.violate("forced/"+pod.Name, "pod %s under a PDB was removed without eviction (%s: %s): node %s carries %s",
			pod.Name, c.Reason, c.Message, node.Name, strings.Join(causes, ", "))
		return
	}
	o.note("pod %s under a PDB was deleted by kube-controller-manager's taint-eviction controller (%s), but node %s carries no NoExecute taint the pod does not tolerate (taints [%s]): the controller acted on a Node its informer had not yet seen updated",
		pod.Name, c.Message, node.Name, strings.Join(taintStrings(node.Spec.Taints), ", "))
}

// evictingTaints are node's NoExecute taints that the taint-eviction
// controller would remove pod for: those it does not tolerate, and those
// it tolerates only for tolerationSeconds.
func evictingTaints(pod *corev1.Pod, node *corev1.Node) []string {
	var out []string
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		forever := false
		for _, tol := range pod.Spec.Tolerations {
			if tol.ToleratesTaint(klog.Background(), &t, false) && tol.TolerationSeconds == nil {
				forever = true
				break
			}
		}
		if !forever {
			out = append(out, t.Key+":"+string(t.Effect))
		}
	}
	return out
}

// onNodeUpdate: karpenter.sh/unregistered is on a Node from its kubelet's
// registration until the autoscaler registers it; put back on a Node that
// no longer had it, it evicts every pod there that does not tolerate it.
func (o *Observer) onNodeUpdate(old, cur *corev1.Node) {
	if unregisteredPutBack(old, cur) {
		o.violate("unregistered/"+cur.Name, "node %s got %s back after it had been removed (taints [%s])",
			cur.Name, taintUnregistered, strings.Join(taintStrings(cur.Spec.Taints), ", "))
	}
}

func unregisteredPutBack(old, cur *corev1.Node) bool {
	return !hasTaintKey(old.Spec.Taints, taintUnregistered) && hasTaintKey(cur.Spec.Taints, taintUnregistered)
}

func hasTaintKey(taints []corev1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
}

func taintStrings(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

// note records something the round met that breaks no promise of
// joiner's but should be seen (the round's log prints the notes).
func (o *Observer) note(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.notes = append(o.notes, time.Now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// Notes returns what was noted so far.
func (o *Observer) Notes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.judging > 0 {
		o.judged.Wait()
	}
	return slices.Clone(o.notes)
}

// nodeTaints describes a node's taints as the observer's cache last saw
// them, for a violation's message.
func (o *Observer) nodeTaints(name string) string {
	obj, ok, err := o.nodes.GetByKey(name)
	if err != nil || !ok {
		return "gone from the observer's cache"
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return "unknown"
	}
	return "taints [" + strings.Join(taintStrings(n.Spec.Taints), ", ") + "]"
}

func hasDisruptionTarget(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// judgeDeletion: a pod under a PDB deleted without the Eviction API (no
// DisruptionTarget condition) while its ReplicaSet still wanted more pods
// than the healthy others bypassed its PDB. A ReplicaSet scaling down
// deletes pods directly too, but then it wants no more than the healthy
// pods it keeps; the replacement it creates is not healthy yet, so it is
// not counted. The others are counted as they were when the pod's
// deletion came (podView), not as they are when it is judged: a kept pod
// evicted since, within its PDB, does not make the ReplicaSet's own
// deletion a bypass (a big EC2 round, seed 3001, was failed so).
func (o *Observer) judgeDeletion(pod *corev1.Pod) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "ReplicaSet" {
		return
	}
	o.mu.Lock()
	judged := o.evicted["deleted/"+pod.Name]
	o.evicted["deleted/"+pod.Name] = true
	o.mu.Unlock()
	if judged || !o.hasPDB(pod) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := o.kube.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
	if err != nil || rs.Spec.Replicas == nil || rs.DeletionTimestamp != nil {
		return
	}
	active := 0
	o.mu.Lock()
	for _, p := range o.podView {
		if c := metav1.GetControllerOf(p); c == nil || c.UID != owner.UID {
			continue
		}
		if p.UID != pod.UID && podHealthy(p) {
			active++
		}
	}
	o.mu.Unlock()
	if want := int(*rs.Spec.Replicas); active < want {
		o.violate("deleted/"+pod.Name, "pod %s under a PDB was deleted without the Eviction API (no DisruptionTarget condition) while ReplicaSet %s wanted %d pods and had %d other healthy ones: its PDB was bypassed",
			pod.Name, rs.Name, want, active)
	}
}

// hasPDB reports whether a PDB selects pod.
func (o *Observer) hasPDB(pod *corev1.Pod) bool {
	pdbs, err := o.pdbsOf(pod)
	return err == nil && len(pdbs) > 0
}

func (o *Observer) pdbsOf(pod *corev1.Pod) ([]policyv1.PodDisruptionBudget, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := o.kube.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, pdb)
		}
	}
	return out, nil
}

// judgeEviction checks, from the observer's own count of healthy pods,
// that the eviction left at least what each PDB of the pod demands. The
// pods are counted as the handler has seen them up to this eviction
// (podView, the API server's order), as judgeDeletion counts them: the
// informer's cache runs ahead of the handler, and a later eviction the
// cache already holds (the PDB allowed it once this one's pod was back
// or gone) would make this one look like it left too few.
func (o *Observer) judgeEviction(pod *corev1.Pod) {
	pdbs, err := o.pdbsOf(pod)
	if err != nil || len(pdbs) == 0 {
		return
	}
	for _, pdb := range pdbs {
		sel, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		healthy, total := 0, 0
		o.mu.Lock()
		for _, p := range o.podView {
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			total++
			if p.UID != pod.UID && podHealthy(p) {
				healthy++
			}
		}
		o.mu.Unlock()
		// maxUnavailable counts against the workload's desired replicas,
		// which the PDB's expected count reports.
		desired := int(pdb.Status.ExpectedPods)
		if desired == 0 {
			desired = total
		}
		var minAvailable int
		switch {
		case pdb.Spec.MinAvailable != nil:
			minAvailable, _ = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, desired, true)
		case pdb.Spec.MaxUnavailable != nil:
			maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, desired, true)
			minAvailable = desired - maxUnavailable
		}
		if healthy < minAvailable {
			o.violate("pdb/"+pod.Name, "eviction of %s left %d healthy pods, PDB %s demands %d of %d", pod.Name, healthy, pdb.Name, minAvailable, desired)
		}
	}
}

func podHealthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// onNodeGone records when a Node was deleted, by the resourceVersion its
// watch delivered with the deletion (a tombstone's is from before it, and
// is not recorded), and judges its do-not-disrupt pods.
func (o *Observer) onNodeGone(ctx context.Context, obj any) {
	t, missed := obj.(cache.DeletedFinalStateUnknown)
	if missed {
		obj = t.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if rv, err := strconv.ParseUint(n.ResourceVersion, 10, 64); err == nil && !missed {
		o.mu.Lock()
		o.nodeGoneAt[n.Name] = rv
		o.mu.Unlock()
	}
	o.onNodeDeleted(ctx, n)
}

// onNodeDeleted: a node running a do-not-disrupt pod may go only once its
// NodeClaim's terminationGracePeriod has passed since deletion began.
func (o *Observer) onNodeDeleted(ctx context.Context, node *corev1.Node) {
	o.mu.Lock()
	pods := slices.Clone(o.dnd[node.Name])
	allowed := o.allowed[node.Name]
	delete(o.dnd, node.Name)
	o.mu.Unlock()
	if len(pods) == 0 || allowed {
		return
	}
	// Find the NodeClaim: its deletion start and grace period.
	claims, err := o.dyn.Resource(nodeClaimsGVR).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		o.violate("dnd-list/"+node.Name, "listing NodeClaims after node %s went: %v", node.Name, err)
		return
	}
	var since time.Time
	var grace time.Duration = -1
	for _, c := range claims.Items {
		if name, _, _ := unstructured.NestedString(c.Object, "status", "nodeName"); name != node.Name {
			continue
		}
		if ts := c.GetDeletionTimestamp(); ts != nil {
			since = ts.Time
		}
		if s, ok, _ := unstructured.NestedString(c.Object, "spec", "terminationGracePeriod"); ok {
			if d, err := time.ParseDuration(s); err == nil {
				grace = d
			}
		}
	}
	if grace >= 0 && !since.IsZero() && time.Since(since) >= grace {
		return
	}
	o.violate("dnd/"+node.Name, "node %s was deleted while do-not-disrupt pods %s ran on it (grace period %s, deletion began %s)",
		node.Name, strings.Join(pods, ", "), graceString(grace), since.UTC().Format(time.RFC3339))
}

func graceString(d time.Duration) string {
	if d < 0 {
		return "unset"
	}
	return d.String()
}

// CheckSettled waits up to timeout for the settled state: every pod of
// the namespace Running, and the cluster's live instances matching its
// NodeClaims one to one (no orphan once garbage collection has had its
// period, no NodeClaim with two instances). It returns what still does
// not hold at the deadline.
func (o *Observer) CheckSettled(ctx context.Context, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		problems, err := o.settled(ctx)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if len(problems) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return problems
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (o *Observer) settled(ctx context.Context) ([]string, error) {
	var problems []string
	pods, err := o.kube.CoreV1().Pods(o.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodRunning {
			problems = append(problems, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase))
		}
	}
	claims, err := o.dyn.Resource(nodeClaimsGVR).List(ctx, metav1.ListOptions{LabelSelector: labelNodePool + "=" + o.opts.NodePool})
	if err != nil {
		return nil, err
	}
	claimOf := map[string]string{} // instance id -> NodeClaim
	names := map[string]bool{}
	for _, c := range claims.Items {
		names[c.GetName()] = true
		if c.GetDeletionTimestamp() != nil {
			problems = append(problems, fmt.Sprintf("NodeClaim %s is still being deleted", c.GetName()))
		}
		pid, _, _ := unstructured.NestedString(c.Object, "status", "providerID")
		if pid == "" {
			problems = append(problems, fmt.Sprintf("NodeClaim %s is not launched", c.GetName()))
			continue
		}
		claimOf[pid[strings.LastIndex(pid, "/")+1:]] = c.GetName()
	}
	live, err := o.opts.Cloud.Live(ctx, o.opts.Cluster)
	if err != nil {
		return nil, err
	}
	launched := map[string][]string{}
	for id, inst := range live {
		if _, ok := claimOf[id]; !ok {
			problems = append(problems, fmt.Sprintf("instance %s (tagged for NodeClaim %s, launched %s) has no NodeClaim",
				id, inst.Tags[tagNodeClaim], inst.LaunchTime.UTC().Format(time.RFC3339)))
			continue
		}
		launched[claimOf[id]] = append(launched[claimOf[id]], id)
	}
	for name := range names {
		if ids := launched[name]; len(ids) > 1 {
			problems = append(problems, fmt.Sprintf("NodeClaim %s has %d instances %v", name, len(ids), ids))
		}
	}
	slices.Sort(problems)
	return problems, nil
}
