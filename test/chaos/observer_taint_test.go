package chaos

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

var unregisteredTaint = corev1.Taint{Key: taintUnregistered, Effect: corev1.TaintEffectNoExecute}

// staleTaintNote is what the observer notes of a taint eviction for a
// taint the Node no longer carries.
const staleTaintNote = "the controller acted on a Node its informer had not yet seen updated"

// A pod under a PDB deleted by kube-controller-manager's taint-eviction
// controller is judged by the taints its Node carries in the API server:
// a NoExecute taint the pod does not tolerate (or tolerates only for a
// while) is a violation; a deletion for a taint the Node no longer carries
// (the controller's Node informer behind its Pod informer after a
// kube-apiserver restart, as big chaos rounds met) is noted, not held
// against joiner. karpenter.sh/unregistered put back on a Node is a
// violation of its own.
func TestObserverJudgesTaintEvictions(t *testing.T) {
	f := newWebFixture(t, false)
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	// What the DefaultTolerationSeconds admission plugin gives every pod.
	defaults := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	prefix := strings.ToLower(t.Name())
	tests := []struct {
		name string
		// node is the pod's Node as the API server holds it when the pod
		// goes; nil: there is none.
		node       *corev1.Node
		tols       []corev1.Toleration
		want, note string // in a violation, in a note; "" means none
	}{
		{name: "taint the node no longer carries", node: taintedNode(prefix + "-stale"), tols: defaults, note: staleTaintNote},
		{name: "unregistered taint still on the node", node: taintedNode(prefix+"-unregistered", unregisteredTaint), tols: defaults,
			want: "carries karpenter.sh/unregistered:NoExecute"},
		{name: "unreachable, tolerated for a while", node: taintedNode(prefix+"-unreachable", unreachable), tols: defaults,
			want: "carries node.kubernetes.io/unreachable:NoExecute"},
		{name: "unregistered tolerated forever", node: taintedNode(prefix+"-tolerated", unregisteredTaint),
			tols: append(defaults, corev1.Toleration{Key: taintUnregistered, Operator: corev1.TolerationOpExists}), note: staleTaintNote},
		{name: "node gone", tols: defaults, want: "which the observer could not read"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodeName := prefix + "-gone"
			if tt.node != nil {
				f.env.Create(t, tt.node.DeepCopy())
				nodeName = tt.node.Name
			}
			o := f.observer(t)
			pod := f.pod(fmt.Sprintf("web-%d", i))
			pod.Spec = corev1.PodSpec{NodeName: nodeName, Tolerations: tt.tols}
			o.onPod(disruptedPod(pod, "DeletionByTaintManager"))
			expectJudged(t, o, tt.want, tt.note)
		})
	}

	t.Run("unregistered put back", func(t *testing.T) {
		o := f.observer(t)
		registering := taintedNode("n", unregisteredTaint)
		registered := taintedNode("n")
		o.onNodeUpdate(registering, registered)
		if v := o.Violations(); len(v) > 0 {
			t.Fatalf("the taint's removal is registration, got %q", v)
		}
		o.onNodeUpdate(registered, registering)
		expectJudged(t, o, "node n got karpenter.sh/unregistered back", "")
	})
}

// A pod under a PDB whose deletion the observer's pod watch missed (a
// tombstone after the watch re-listed: big sim round 2013 lost two pods so
// in the second before its watch came back from a kube-apiserver restart)
// holds its state from before the deletion, without the DisruptionTarget
// condition the deleter set. It is judged by the pod's events: the
// taint-eviction controller's TaintManagerEviction as a taint eviction;
// none, noted, not judged. A deletion the watch delivered without the
// condition is still a PDB bypass.
func TestObserverJudgesMissedDeletions(t *testing.T) {
	// The ReplicaSet wants 2 pods that never schedule: a deletion judged
	// against it finds no healthy other.
	f := newWebFixture(t, true)
	prefix := strings.ToLower(t.Name())
	tests := []struct {
		name   string
		taints []corev1.Taint // of the pod's Node, as the API server holds it
		event  string         // recorded on the pod, "" for none
		missed bool           // a tombstone, or the watch's own deletion
		want   string         // in the violation; "" means none
		note   string         // in a note; "" means none
	}{
		{name: "taint eviction missed, node no longer tainted", event: reasonTaintManagerEviction, missed: true,
			note: "deleted by kube-controller-manager's taint-eviction controller"},
		{name: "taint eviction missed, node still tainted", taints: []corev1.Taint{unregisteredTaint}, event: reasonTaintManagerEviction, missed: true,
			want: "carries karpenter.sh/unregistered:NoExecute"},
		{name: "missed with no taint eviction recorded", event: "Evicted", missed: true,
			note: "how it was deleted is unknown"},
		{name: "deletion seen without the Eviction API",
			want: "deleted without the Eviction API"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := taintedNode(fmt.Sprintf("%s-%d", prefix, i), tt.taints...)
			f.env.Create(t, node)
			pod := f.pod(fmt.Sprintf("web-%d", i))
			pod.Spec.NodeName = node.Name
			if tt.event != "" {
				f.env.Create(t, &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: pod.Name + ".event", Namespace: f.ns},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: f.ns, Name: pod.Name, UID: pod.UID},
					Reason:         tt.event, Message: "Marking for deletion Pod " + f.ns + "/" + pod.Name, Type: corev1.EventTypeNormal,
				})
			}
			o := f.observer(t)
			o.onPod(pod)
			if tt.missed {
				o.onPodDeleted(cache.DeletedFinalStateUnknown{Key: f.ns + "/" + pod.Name, Obj: pod})
			} else {
				o.onPodDeleted(deletedPod(pod))
			}
			expectJudged(t, o, tt.want, tt.note)
		})
	}
}

// Deletions the pod watch missed come in bursts: big EC2 round 3023
// restarted kube-apiserver while a scale-down deleted 95 pods, and 94
// tombstones each polled the namespace's events on its own, twenty
// times; the API server reads a namespace's events whole from etcd (4,171
// of them, no watch cache), and the restarted kube-apiserver answering
// them never became ready. A burst is judged from one list of events a
// poll, however many pods wait, and each pod still as it would be alone.
func TestObserverJudgesMissedDeletionsInBulk(t *testing.T) {
	f := newWebFixture(t, true)
	node := taintedNode(strings.ToLower(t.Name()), unregisteredTaint)
	f.env.Create(t, node)
	var lists atomic.Int32
	config := rest.CopyConfig(f.env.Config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/events") {
				lists.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	const pods = 30
	var burst []*corev1.Pod
	for i := range pods {
		pod := f.pod(fmt.Sprintf("web-%d", i))
		pod.Spec.NodeName = node.Name
		burst = append(burst, pod)
	}
	// The first was the taint-eviction controller's, on a Node that still
	// carries the taint.
	f.env.Create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-0.event", Namespace: f.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: f.ns, Name: burst[0].Name, UID: burst[0].UID},
		Reason:         reasonTaintManagerEviction, Message: "Marking for deletion Pod " + f.ns + "/" + burst[0].Name, Type: corev1.EventTypeNormal,
	})
	o := f.observerOf(t, config)
	for _, pod := range burst {
		o.onPod(pod)
	}
	for _, pod := range burst {
		o.onPodDeleted(cache.DeletedFinalStateUnknown{Key: f.ns + "/" + pod.Name, Obj: pod})
	}
	expectJudged(t, o, "pod web-0 under a PDB was removed without eviction", "how it was deleted is unknown")
	if v := o.Violations(); len(v) != 1 {
		t.Errorf("%d violations, want 1 (web-0): %q", len(v), v)
	}
	if n := len(o.Notes()); n != pods-1 {
		t.Errorf("%d notes, want %d (every pod but web-0)", n, pods-1)
	}
	// A list a poll, and one for the events of the pods given up at a
	// poll; a pod's polls count from its arrival, so the burst may span
	// two polls. One list a pod a poll would be 29 x 20.
	if n := lists.Load(); n > 2*missedPolls {
		t.Errorf("%d lists of events for %d missed deletions, want at most %d", n, pods, 2*missedPolls)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A pod under a PDB that kube-controller-manager's pod garbage collector
// removed (its node no longer exists) is a violation, its node released
// before it was drained, unless the observer saw the pod without a node
// after the node's deletion: kube-scheduler then bound it to a node that
// was already gone, which no autoscaler can drain, and it is noted. Chaos
// round sim 1 failed on such a removal in CI after a kube-apiserver
// restart, with nothing to tell the two apart.
func TestObserverJudgesOrphanedPods(t *testing.T) {
	f := newWebFixture(t, false)
	const node = "gone"
	tests := []struct {
		name string
		// unbound and bound: resourceVersions at which the pod handler saw
		// the pod without and with its node (0: not seen); deleted: the
		// node's deletion's, tombstone: whether only a tombstone told it.
		unbound, bound, deleted uint64
		tombstone               bool
		want, note              string
	}{
		{name: "bound after its node was deleted", unbound: 100, bound: 110, deleted: 90,
			note: "kube-scheduler bound it to node gone after the node was deleted"},
		{name: "node released with the pod on it", unbound: 50, bound: 60, deleted: 90,
			want: "its node went away before it was drained"},
		{name: "node's deletion seen only as a tombstone", unbound: 100, bound: 110, deleted: 90, tombstone: true,
			want: "the node's deletion: not seen"},
		{name: "pod never seen without a node", bound: 110, deleted: 90,
			want: "pod last seen without a node: not seen"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := f.observer(t)
			pod := f.pod(fmt.Sprintf("orphan-%d", i))
			at := func(p *corev1.Pod, rv uint64) *corev1.Pod {
				p = p.DeepCopy()
				p.ResourceVersion = fmt.Sprint(rv)
				return p
			}
			gone := func() {
				n := taintedNode(node)
				n.ResourceVersion = fmt.Sprint(tt.deleted)
				var obj any = n
				if tt.tombstone {
					obj = cache.DeletedFinalStateUnknown{Key: node, Obj: n}
				}
				o.onNodeGone(t.Context(), obj)
			}
			if tt.unbound != 0 && tt.unbound < tt.deleted {
				o.onPod(at(pod, tt.unbound))
			}
			gone()
			if tt.unbound > tt.deleted {
				o.onPod(at(pod, tt.unbound))
			}
			pod.Spec.NodeName = node
			o.onPod(at(pod, tt.bound))
			o.onPod(at(disruptedPod(pod, "DeletionByPodGC"), tt.bound+10))
			expectJudged(t, o, tt.want, tt.note)
		})
	}
}
