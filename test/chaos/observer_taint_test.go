package chaos

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
