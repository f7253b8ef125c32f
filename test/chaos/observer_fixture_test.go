package chaos

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/test"
)

// webFixture is the world the tests of the observer's pod judges share,
// against the package's real API server: a namespace whose PDB web
// allows one app=web pod unavailable and, when a test asks for it, a
// ReplicaSet web that wants 2 pods. Its own pods never schedule (no node
// matches), so the judge counts only the healthy pods a test shows it.
type webFixture struct {
	env *test.Environment
	ns  string
	// rs is nil when the test's pods have no controller.
	rs *appsv1.ReplicaSet
}

var webLabels = map[string]string{"app": "web"}

func newWebFixture(t *testing.T, withReplicaSet bool) *webFixture {
	env := test.Env(t)
	f := &webFixture{env: env, ns: env.Namespace(t)}
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: webLabels},
		},
	})
	if withReplicaSet {
		f.rs = &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: webLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: webLabels},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{"chaos.joiner.dev/nowhere": "true"},
						Containers:   []corev1.Container{{Name: "app", Image: "pause"}},
					},
				},
			},
		}
		env.Create(t, f.rs)
	}
	return f
}

// pod is a Running, Ready web pod on no node, with a UID of its own,
// controlled by the fixture's ReplicaSet if it has one.
func (f *webFixture) pod(name string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, UID: types.UID(f.ns + "-" + name), Labels: webLabels},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if f.rs != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: f.rs.Name, UID: f.rs.UID, Controller: ptr.To(true)}}
	}
	return p
}

// observer is a new observer of the fixture's namespace, not started:
// its pod cache (the informer's, which runs ahead of the handler) holds
// cached, its node cache nothing; a test feeds its handlers itself.
func (f *webFixture) observer(t *testing.T, cached ...*corev1.Pod) *Observer {
	return f.observerOf(t, f.env.Config, cached...)
}

// observerOf is observer with its own client configuration.
func (f *webFixture) observerOf(t *testing.T, config *rest.Config, cached ...*corev1.Pod) *Observer {
	o, err := NewObserver(ObserverOptions{Config: config, Namespace: f.ns})
	if err != nil {
		t.Fatal(err)
	}
	o.pods = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range cached {
		if err := o.pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	o.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	return o
}

// deletedPod is p once its deletion began, with no DisruptionTarget
// condition (a ReplicaSet's scale-down, or a plain delete).
func deletedPod(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = ptr.To(metav1.Now())
	return p
}

// disruptedPod is p deleted by a disruption whose DisruptionTarget
// condition gives reason (EvictionByEvictionAPI, DeletionByTaintManager).
func disruptedPod(p *corev1.Pod, reason string) *corev1.Pod {
	p = deletedPod(p)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	return p
}

func taintedNode(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
}

// expectJudged checks what o made of a case: a violation holding want
// (none when want is ""), a note holding note (none when note is "").
func expectJudged(t *testing.T, o *Observer, want, note string) {
	t.Helper()
	expectAmong(t, "violation", o.Violations(), want)
	expectAmong(t, "note", o.Notes(), note)
}

func expectAmong(t *testing.T, kind string, got []string, want string) {
	t.Helper()
	all := strings.Join(got, "\n")
	switch {
	case want == "" && all != "":
		t.Errorf("%ss %q, want none", kind, all)
	case want != "" && !strings.Contains(all, want):
		t.Errorf("%ss %q, want one containing %q", kind, all, want)
	}
}
