package chaos

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/test"
)

// A pod under a PDB deleted by kube-controller-manager's taint-eviction
// controller is judged by the taints its Node carries in the API server:
// a NoExecute taint the pod does not tolerate (or tolerates only for a
// while) is a violation; a deletion for a taint the Node no longer carries
// (the controller's Node informer behind its Pod informer after a
// kube-apiserver restart, as big chaos rounds met) is noted, not held
// against joiner. karpenter.sh/unregistered put back on a Node is a
// violation of its own.
func TestObserverJudgesTaintEvictions(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	})
	unregistered := corev1.Taint{Key: taintUnregistered, Effect: corev1.TaintEffectNoExecute}
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	node := func(name string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	// What the DefaultTolerationSeconds admission plugin gives every pod.
	defaults := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	prefix := strings.ToLower(t.Name())
	tests := []struct {
		name  string
		node  *corev1.Node // as the API server holds it when the pod goes
		tols  []corev1.Toleration
		want  string // in the violation; "" means none
		noted bool
	}{
		{name: "taint the node no longer carries", node: node(prefix + "-stale"), tols: defaults, noted: true},
		{name: "unregistered taint still on the node", node: node(prefix+"-unregistered", unregistered), tols: defaults,
			want: "carries karpenter.sh/unregistered:NoExecute"},
		{name: "unreachable, tolerated for a while", node: node(prefix+"-unreachable", unreachable), tols: defaults,
			want: "carries node.kubernetes.io/unreachable:NoExecute"},
		{name: "unregistered tolerated forever", node: node(prefix+"-tolerated", unregistered),
			tols: append(defaults, corev1.Toleration{Key: taintUnregistered, Operator: corev1.TolerationOpExists}), noted: true},
		{name: "node gone", node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-gone"}}, tols: defaults,
			want: "which the observer could not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.HasSuffix(tt.node.Name, "-gone") {
				env.Create(t, tt.node.DeepCopy())
			}
			o, err := NewObserver(ObserverOptions{Config: env.Config, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			o.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			now := metav1.Now()
			o.onPod(&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{"app": "web"}, DeletionTimestamp: &now},
				Spec:       corev1.PodSpec{NodeName: tt.node.Name, Tolerations: tt.tols},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
					Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
					Message: "Taint manager: deleting due to NoExecute taint",
				}}},
			})
			got := strings.Join(o.Violations(), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violation %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations %q, want one containing %q", got, tt.want)
			}
			if noted := len(o.Notes()) > 0; noted != tt.noted {
				t.Errorf("noted %v (%q), want %v", noted, o.Notes(), tt.noted)
			}
		})
	}

	t.Run("unregistered put back", func(t *testing.T) {
		o, err := NewObserver(ObserverOptions{Config: env.Config, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		registering := node("n", unregistered)
		registered := node("n")
		o.onNodeUpdate(registering, registered)
		if v := o.Violations(); len(v) > 0 {
			t.Fatalf("the taint's removal is registration, got %q", v)
		}
		o.onNodeUpdate(registered, registering)
		if got := strings.Join(o.Violations(), "\n"); !strings.Contains(got, "node n got karpenter.sh/unregistered back") {
			t.Errorf("violations %q, want the taint put back on node n", got)
		}
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
	env := test.Env(t)
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	})
	// The ReplicaSet wants 2 pods that never schedule: a deletion judged
	// against it finds no healthy other.
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"chaos.joiner.dev/nowhere": "true"},
					Containers:   []corev1.Container{{Name: "app", Image: "pause"}},
				},
			},
		},
	}
	env.Create(t, rs)
	prefix := strings.ToLower(t.Name())
	unregistered := corev1.Taint{Key: taintUnregistered, Effect: corev1.TaintEffectNoExecute}
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
		{name: "taint eviction missed, node still tainted", taints: []corev1.Taint{unregistered}, event: reasonTaintManagerEviction, missed: true,
			want: "carries karpenter.sh/unregistered:NoExecute"},
		{name: "missed with no taint eviction recorded", event: "Evicted", missed: true,
			note: "how it was deleted is unknown"},
		{name: "deletion seen without the Eviction API",
			want: "deleted without the Eviction API"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}, Spec: corev1.NodeSpec{Taints: tt.taints}}
			env.Create(t, node)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: ns, UID: types.UID(fmt.Sprintf("%s-web-%d", ns, i)), Labels: labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
				Spec:   corev1.PodSpec{NodeName: node.Name},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
			}
			if tt.event != "" {
				env.Create(t, &corev1.Event{
					ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-%d.event", i), Namespace: ns},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID},
					Reason:         tt.event, Message: "Marking for deletion Pod " + ns + "/" + pod.Name, Type: corev1.EventTypeNormal,
				})
			}
			o, err := NewObserver(ObserverOptions{Config: env.Config, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			o.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			o.onPod(pod)
			if tt.missed {
				o.onPodDeleted(cache.DeletedFinalStateUnknown{Key: ns + "/" + pod.Name, Obj: pod})
			} else {
				gone := pod.DeepCopy()
				gone.DeletionTimestamp = ptr.To(metav1.Now())
				o.onPodDeleted(gone)
			}
			got := strings.Join(o.Violations(), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violation %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations %q, want one containing %q", got, tt.want)
			}
			notes := strings.Join(o.Notes(), "\n")
			switch {
			case tt.note == "" && notes != "":
				t.Errorf("noted %q, want nothing", notes)
			case tt.note != "" && !strings.Contains(notes, tt.note):
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
		})
	}
}
