package nomination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/ownwrites"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Nominations is what the writer reads and records (state.Nominations):
// where each pod was planned, and which status.nominatedNodeName values
// joiner wrote (SetNominatedNodeName, the writer's own record).
type Nominations interface {
	state.NominationReader
	SetNominatedNodeName(pod types.NamespacedName, node string)
}

// nominationRecheck is how often a pending pod holding a
// status.nominatedNodeName joiner wrote is checked again: its nomination
// can end (the node filled up, the NodeClaim failed) without an event on
// the pod after the model took it in.
const nominationRecheck = 5 * time.Second

// staleRequeue is how soon a pod read older than the writer's own last
// patch is decided again if no watch event brings it back first.
const staleRequeue = 2 * time.Second

// conflictRetry is how soon a pod whose patch found it changed is decided
// again: long enough for the cache to see the version that won.
const conflictRetry = 200 * time.Millisecond

// Writer keeps status.nominatedNodeName on the pods the
// provisioner planned: once a planned pod's NodeClaim has a registered
// Node (or just before registration makes it schedulable), the pod names
// that Node, so kube-scheduler keeps room there for it (KEP-5278,
// "NominatedNodeName for expected pod placement") instead of giving the
// room to whichever pod it tries first. joiner owns the field only for the
// pods it wrote it on: it moves it when the plan changes, clears it when
// the nomination ends or the pod binds elsewhere, and never overwrites a
// value someone else (kube-scheduler preempting) set. kube-scheduler 1.36
// clears the field each time it tries the pod and finds no node (as it
// does while the node still carries its startup taints), so the writer
// sets it again after each clearing while the nomination stands: one patch
// per failed attempt while the Node is registered but not initialised
// (startup taints, the not-ready taint), and for at most the nomination
// window after; while the Node is unregistered not at each attempt but
// once, just before registration makes it schedulable (HoldRoom). Where
// kube-scheduler does not honour the field nothing breaks: the pod is
// planned by the model as before.
//
// Which values joiner wrote survives a restart in the pod itself: the
// writer patches as field manager "joiner", and the API server records
// who last set status.nominatedNodeName in the pod's managedFields. A new
// joiner process (or a new leader) that finds a value it has no record of
// reads the pod's managedFields once: a value joiner wrote is adopted, so
// the pod is joiner's to plan again and the value is cleared or kept by
// the same rules as before the restart; any other value is left alone.
//
// Every patch tests the value it was computed from: a pod whose value
// changed in between (kube-scheduler setting its own nomination) or that
// was bound is read again and decided afresh, never overwritten.
type Writer struct {
	client client.Client
	// reader reads pods past the cache, whose copies have no managedFields
	// (the manager strips them to save memory).
	reader client.Reader
	state  Nominations
	// indexed: the client's cache indexes Nodes by provider ID (set by
	// Register), so a Node is found before registration records it on the
	// NodeClaim.
	indexed bool

	// written tells which cached pods are older than the writer's own
	// last patch of them.
	written *ownwrites.Record

	mu sync.Mutex
	// foreign are pods whose current value was checked and is not
	// joiner's, so the check is not repeated while the value stays.
	foreign map[types.NamespacedName]string
}

// FieldManager is the field manager of the writer's patches:
// the API server's record of who set a pod's status.nominatedNodeName.
// It is joiner's user agent, so values written by any joiner version are
// recognised.
const FieldManager = "joiner"

// NewWriter returns a writer that reads pods and NodeClaims
// through c (the manager's cached client) and writes pod status through it.
// Register sets the uncached reader from the manager; a writer used
// without Register reads managedFields through c.
func NewWriter(c client.Client, s Nominations) *Writer {
	return &Writer{client: c, reader: c, state: s, written: ownwrites.New(), foreign: map[types.NamespacedName]string{}}
}

// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// Register adds the writer to mgr: it watches pending pods and pods with a
// nominated node, and NodeClaims (their pods' room appears when they
// register and vanishes when they go away).
func (w *Writer) Register(mgr manager.Manager) error {
	w.reader = mgr.GetAPIReader()
	w.indexed = true
	err := builder.ControllerManagedBy(mgr).
		Named("nomination").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && (pod.Spec.NodeName == "" || pod.Status.NominatedNodeName != "")
		}))).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return w.podsNominatedTo(o.GetName())
		})).
		// A NodeClaim's Node appears before registration records it on the
		// NodeClaim: losing its unregistered taint brings its pods here.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			node, ok := o.(*corev1.Node)
			if !ok || node.Spec.ProviderID == "" {
				return nil
			}
			claims := &v1.NodeClaimList{}
			if err := w.client.List(ctx, claims, client.MatchingFields{state.IndexNodeClaimProviderID: node.Spec.ProviderID}); err != nil {
				return nil
			}
			var out []reconcile.Request
			for i := range claims.Items {
				out = append(out, w.podsNominatedTo(claims.Items[i].Name)...)
			}
			return out
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return true },
			// A new provider ID joins the Node to its NodeClaim; losing the
			// unregistered taint makes its room schedulable.
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, cur := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
				return old.Spec.ProviderID != cur.Spec.ProviderID || hasUnregisteredTaint(old) != hasUnregisteredTaint(cur)
			},
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		// Each reconcile is about one pod write: in a burst hundreds of
		// pods are named to their Nodes at once, and ten workers left them
		// waiting 8 s on average in the queue (500-pod burst) while their
		// room could be given away.
		WithOptions(controller.Options{MaxConcurrentReconciles: 50}).
		Complete(w)
	if err != nil {
		return fmt.Errorf("registering nomination writer: %w", err)
	}
	return nil
}

func (w *Writer) podsNominatedTo(nodeClaimName string) []reconcile.Request {
	var out []reconcile.Request
	for _, pod := range w.state.PodsNominatedTo(nodeClaimName) {
		out = append(out, reconcile.Request{NamespacedName: pod})
	}
	return out
}

// Reconcile brings one pod's status.nominatedNodeName in line with its
// nomination.
func (w *Writer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := w.sync(ctx, req.NamespacedName, nil)
	if errors.Is(err, errChangedSinceRead) {
		// Changed since the cache's copy: decide again on the new
		// version, which the cache's watch brings.
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

// HoldRoom names node in status.nominatedNodeName of every pending pod
// planned for nodeClaim that does not carry it yet. Registration calls it
// just before it removes karpenter.sh/unregistered from node, the moment
// the node's room becomes schedulable. kube-scheduler clears the value at
// each attempt while the Node is still tainted, and Reconcile sets it
// again only once the taint is gone (one write per pod, not one per
// attempt), but the taint's removal wakes kube-scheduler too, and it gave
// the room to whichever pod it tried first before the write arrived. A
// value written while the taint is still there is in kube-scheduler's
// nominator when the Node turns schedulable: other pods are filtered with
// the planned pod counted on that node, and the planned pod is tried
// there first. A pod whose value changed between the read and the patch
// is tried once more on a fresh read; a pod whose write still fails is
// left to Reconcile once the taint is gone.
func (w *Writer) HoldRoom(ctx context.Context, nodeClaim, node string) error {
	h := &hold{nodeClaim: nodeClaim, node: node}
	var (
		g    errgroup.Group
		mu   sync.Mutex
		errs []error
	)
	g.SetLimit(holdRoomWrites)
	for _, key := range w.state.PodsNominatedTo(nodeClaim) {
		g.Go(func() error {
			_, err := w.sync(ctx, key, h)
			if errors.Is(err, errChangedSinceRead) {
				// Changed between the read and the patch: once more on a
				// fresh read, as the taint is about to go.
				_, err = w.sync(ctx, key, h)
			}
			if errors.Is(err, errChangedSinceRead) {
				// Changed again: the pod's own Reconcile decides on the
				// version its watch brings.
				err = nil
			}
			if err != nil {
				// One pod's failure does not cancel the others' writes.
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("holding room on node %s for the pods planned for nodeclaim %s: %w", node, nodeClaim, err)
	}
	return nil
}

// holdRoomWrites bounds HoldRoom's concurrent pod writes: a large node
// planned for dozens of pods is registered after one round trip, not one
// per pod.
const holdRoomWrites = 16

// hold is HoldRoom's knowledge, ahead of the cache: nodeClaim's Node is
// node, which registration is about to make schedulable.
type hold struct{ nodeClaim, node string }

// sync is Reconcile for one pod; h is set when called by HoldRoom.
func (w *Writer) sync(ctx context.Context, key types.NamespacedName, h *hold) (reconcile.Result, error) {
	// HoldRoom reads the pod past the cache: its write must land before
	// the taint goes, and in a burst the cache is seconds behind the
	// pod (this writer's own last write, kube-scheduler's clearing).
	var read client.Reader = w.client
	if h != nil {
		read = w.reader
	}
	pod := &corev1.Pod{}
	if err := read.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			w.state.SetNominatedNodeName(key, "")
			w.forget(key)
			w.written.Forget(key)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if h == nil && w.written.Stale(key, pod.ResourceVersion) {
		// The cache has not shown this writer's last patch yet: deciding
		// on the older copy would write again, and its test would fail.
		// The patch's watch event brings the pod back.
		return reconcile.Result{RequeueAfter: staleRequeue}, nil
	}
	owned, isOwned := w.state.NominatedNodeName(key)
	current := pod.Status.NominatedNodeName
	if current == "" {
		w.forget(key)
	} else if !isOwned {
		adopted, err := w.adopt(ctx, pod)
		if err != nil {
			return reconcile.Result{}, err
		}
		if adopted {
			owned, isOwned = current, true
		}
	}
	want, err := w.wanted(ctx, pod, h)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case want == current:
		if pod.Spec.NodeName != "" {
			w.state.SetNominatedNodeName(key, "")
		}
	case current != "" && !isOwned:
		// kube-scheduler nominated it (preemption): not joiner's to move.
	case isOwned && owned == want && current != "":
		// Someone changed the value joiner wrote: theirs now.
	case current == "" && h == nil && w.unregistered(ctx, want):
		// The Node still carries karpenter.sh/unregistered: nothing can be
		// scheduled there yet, and kube-scheduler clears the value at each
		// attempt it makes meanwhile. Setting it now would only be cleared
		// again, one pod write each way per attempt (in a burst
		// kube-scheduler tries every pending pod at each new Node), and
		// would race registration's own write. Registration names the
		// Node (HoldRoom) just before it removes the taint, and the
		// taint's removal brings the pod back here. (A value of joiner's
		// naming another node is moved at once instead: it is wrong.)
	default:
		if err := w.patch(ctx, pod, want); err != nil {
			// errChangedSinceRead among them: the caller decides again.
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).V(1).Info("set nominated node name", logging.Pod, klog.KObj(pod), logging.Node, klog.KRef("", want), logging.Previous, current)
	}
	if want != "" && pod.Spec.NodeName == "" {
		return reconcile.Result{RequeueAfter: nominationRecheck}, nil
	}
	return reconcile.Result{}, nil
}

// wanted is the node pod should be nominated to: its nomination's Node
// while the pod is pending, the Node exists (registered or not) and the
// NodeClaim is not going away; otherwise none (for a bound pod, the node it is bound to keeps a
// matching value as it is). h, when set, names the Node of h.nodeClaim, which
// registration is making schedulable, also before the cache holds the
// NodeClaim (as far as the cache knows, it is not going away).
func (w *Writer) wanted(ctx context.Context, pod *corev1.Pod, h *hold) (string, error) {
	if pod.Spec.NodeName != "" {
		if pod.Status.NominatedNodeName == pod.Spec.NodeName {
			return pod.Spec.NodeName, nil
		}
		return "", nil
	}
	if !pods.IsActive(pod) {
		return "", nil
	}
	nom, ok := w.state.Nomination(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if !ok {
		return "", nil
	}
	holding := h != nil && h.nodeClaim == nom.NodeClaim
	// The cached NodeClaim, not the model's copy: this reconcile may run
	// on the NodeClaim's own event, before the model took it in.
	nc := &v1.NodeClaim{}
	if err := w.client.Get(ctx, types.NamespacedName{Name: nom.NodeClaim}, nc); err != nil {
		if apierrors.IsNotFound(err) && holding {
			// Registration is making the NodeClaim's Node schedulable now:
			// the NodeClaim exists, whatever a lagging cache says.
			return h.node, nil
		}
		return "", client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return "", nil
	}
	if nc.Status.NodeName != "" {
		return nc.Status.NodeName, nil
	}
	if holding {
		return h.node, nil
	}
	// Not registered yet, but its Node may exist: it is the pod's node
	// already (HoldRoom names it just before registration removes the
	// unregistered taint, before the node name is recorded on the
	// NodeClaim), and a value naming it is kept.
	if nom.Node != "" {
		return nom.Node, nil
	}
	return w.nodeByProviderID(ctx, nc.Status.ProviderID)
}

// unregistered reports whether the Node named node is in the cache and
// still carries karpenter.sh/unregistered.
func (w *Writer) unregistered(ctx context.Context, node string) bool {
	n := &corev1.Node{}
	if err := w.client.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		return false
	}
	return hasUnregisteredTaint(n)
}

func hasUnregisteredTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintKeyUnregistered {
			return true
		}
	}
	return false
}

// nodeByProviderID names the Node with providerID in the cache, or ""
// when there is none (or the writer runs without the manager's index).
func (w *Writer) nodeByProviderID(ctx context.Context, providerID string) (string, error) {
	if providerID == "" || !w.indexed {
		return "", nil
	}
	nodes := &corev1.NodeList{}
	if err := w.client.List(ctx, nodes, client.MatchingFields{state.IndexNodeProviderID: providerID}); err != nil {
		return "", fmt.Errorf("listing nodes with provider id %s: %w", providerID, err)
	}
	if len(nodes.Items) != 1 {
		return "", nil
	}
	return nodes.Items[0].Name, nil
}

// adopt reports whether the pod's current status.nominatedNodeName, which
// this process has no record of writing, was written by joiner (before a
// restart, or by the previous leader), and if so records it as joiner's.
func (w *Writer) adopt(ctx context.Context, pod *corev1.Pod) (bool, error) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	current := pod.Status.NominatedNodeName
	w.mu.Lock()
	checked, ok := w.foreign[key]
	w.mu.Unlock()
	if ok && checked == current {
		return false, nil
	}
	fresh := &corev1.Pod{}
	if err := w.reader.Get(ctx, key, fresh); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if fresh.Status.NominatedNodeName != current {
		// Moved on since the cache's copy; its event brings it back.
		return false, nil
	}
	if !wroteNominatedNodeName(fresh) {
		w.mu.Lock()
		w.foreign[key] = current
		w.mu.Unlock()
		return false, nil
	}
	w.state.SetNominatedNodeName(key, current)
	log.FromContext(ctx).V(1).Info("adopted nominated node name", logging.Pod, klog.KObj(pod), logging.Node, klog.KRef("", current))
	return true, nil
}

// wroteNominatedNodeName reports whether the pod's managedFields name
// joiner as the manager of status.nominatedNodeName.
func wroteNominatedNodeName(pod *corev1.Pod) bool {
	for _, mf := range pod.ManagedFields {
		if mf.Manager != FieldManager || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			continue
		}
		if _, ok := fields.Status["f:nominatedNodeName"]; ok {
			return true
		}
	}
	return false
}

// patch sets (or, with node "", clears) the pod's nominated node name and
// records that joiner owns the value. The patch is a JSON patch that first
// tests the value it was decided from (and, when it names a node, that the
// pod is still unbound): if kube-scheduler nominated the pod for a
// preemption, or bound it, since pod was read, the patch fails with
// errChangedSinceRead and nothing is overwritten. It does not fail on the
// pod's other status changes: kube-scheduler rewrites the PodScheduled
// condition at each attempt, and in a 500-pod burst, with the cache
// seconds behind, a resourceVersion precondition failed on nearly every
// write, HoldRoom's included, so the room was not held when the taint went.
func (w *Writer) patch(ctx context.Context, pod *corev1.Pod, node string) error {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	before := pod.ResourceVersion
	data, err := json.Marshal(nominationPatch(pod.Status.NominatedNodeName, node))
	if err != nil {
		return fmt.Errorf("encoding the nominated node name patch of pod %s: %w", key, err)
	}
	if err := w.client.Status().Patch(ctx, pod, client.RawPatch(types.JSONPatchType, data), client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsNotFound(err) {
			w.state.SetNominatedNodeName(key, "")
			w.written.Forget(key)
			return nil
		}
		if failedTest(err) {
			// The copy read is older than the pod: the next decision
			// waits for a newer one instead of sending the same patch.
			w.written.Wrote(key, before, "")
			return errChangedSinceRead
		}
		return fmt.Errorf("setting nominated node name of pod %s to %q: %w", key, node, err)
	}
	if pod.Spec.NodeName == "" {
		// A bound pod's events no longer reach the writer (its
		// predicate), so nothing would clear the record.
		w.written.Wrote(key, before, pod.ResourceVersion)
	}
	w.state.SetNominatedNodeName(key, node)
	w.forget(key)
	return nil
}

// errChangedSinceRead: the pod's nominated node name, or its binding,
// changed since the copy a patch was decided from.
var errChangedSinceRead = errors.New("pod changed since it was read")

// jsonPatchOp is one operation of a JSON patch (RFC 6902). Value is never
// omitted: the API server's JSON patch library (evanphx/json-patch) passes
// a test of null when the field is absent, which RFC 6902 leaves open.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// nominationPatch moves status.nominatedNodeName from current (as read)
// to node. The API server omits an empty value, so current "" is tested
// as absent.
func nominationPatch(current, node string) []jsonPatchOp {
	var was any
	if current != "" {
		was = current
	}
	ops := []jsonPatchOp{{Op: "test", Path: "/status/nominatedNodeName", Value: was}}
	if node != "" {
		ops = append(ops, jsonPatchOp{Op: "test", Path: "/spec/nodeName", Value: nil})
	}
	return append(ops, jsonPatchOp{Op: "add", Path: "/status/nominatedNodeName", Value: node})
}

// failedTest reports whether err is the API server refusing a JSON patch
// because one of its test operations failed. It answers 422 Invalid with
// a bare message ("the server rejected our request due to an error in our
// request") and no details; a 422 of validation or of an admission policy
// names the pod or its causes, and is an error to report, not a reason to
// decide again.
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || (d.Kind == "" && d.Name == "" && len(d.Causes) == 0)
}

// forget drops the record that pod's value is not joiner's.
func (w *Writer) forget(pod types.NamespacedName) {
	w.mu.Lock()
	delete(w.foreign, pod)
	w.mu.Unlock()
}
