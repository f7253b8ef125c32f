package chaos

import (
	"strings"
	"testing"
	"time"

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

// A pod under a PDB deleted without the Eviction API is judged against its
// ReplicaSet as the other pods were when the deletion came, in the API
// server's order, not as the informer's cache holds them when the judge
// gets to it. A big EC2 round (seed 3001) scaled web from 100 to 10; the
// observer judged the ReplicaSet's 90 deletions seconds late, after
// consolidation had evicted one of the 10 kept pods within the PDB, and
// failed the round for two of the ReplicaSet's own deletions ("wanted 10
// pods and had 9 other healthy ones").
func TestObserverJudgesDeletionsInOrder(t *testing.T) {
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
	// The ReplicaSet wants 2; kube-controller-manager's pods for it never
	// schedule (no node matches) and the judge never sees them.
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

	now := metav1.NewTime(time.Now())
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "-" + name), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	deleted := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.DeletionTimestamp = &now
		return p
	}
	evicted := func(p *corev1.Pod) *corev1.Pod {
		p = deleted(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
		return p
	}
	a, b, x := pod("a"), pod("b"), pod("x")

	tests := []struct {
		name string
		// events reach the pod handler in this order; the last is the
		// deletion judged.
		events []*corev1.Pod
		// cache is the informer's cache when the judge runs.
		cache []*corev1.Pod
		want  string // in the violation; "" means none
	}{
		{name: "the ReplicaSet's own scale-down, judged after a later eviction",
			events: []*corev1.Pod{a, b, x, deleted(x)}, cache: []*corev1.Pod{a, evicted(b)}},
		{name: "a drain deleting a pod the ReplicaSet still wants",
			events: []*corev1.Pod{a, x, deleted(x)}, cache: []*corev1.Pod{a},
			want: "wanted 2 pods and had 1 other healthy ones"},
		{name: "a second pod deleted while one is already evicted",
			events: []*corev1.Pod{a, b, x, evicted(b), deleted(x)}, cache: []*corev1.Pod{a, evicted(b)},
			want: "wanted 2 pods and had 1 other healthy ones"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewObserver(ObserverOptions{Config: env.Config, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			o.pods = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range tt.cache {
				if err := o.pods.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			o.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range tt.events {
				o.onPod(p)
			}
			got := strings.Join(o.Violations(), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violation %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// An eviction is judged against the other pods as they were when the
// eviction came, in the API server's order, as deletions are: the
// informer's cache runs ahead of the pod handler, and a later eviction the
// PDB allowed (once the first evicted pod was gone) must not make the
// first one look like it left too few healthy pods.
func TestObserverJudgesEvictionsInOrder(t *testing.T) {
	env := test.Env(t)
	ns := env.Namespace(t)
	labels := map[string]string{"app": "web"}
	// No pod of the namespace matches in the API server, so the PDB
	// expects none and the judge counts the pods it has seen (desired =
	// 3, maxUnavailable 1: an eviction must leave 2 healthy).
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	})
	now := metav1.NewTime(time.Now())
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "-" + name), Labels: labels},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	evicted := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.DeletionTimestamp = &now
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
		return p
	}
	a, b, c := pod("a"), pod("b"), pod("c")

	tests := []struct {
		name string
		// events reach the pod handler in this order; the last is the
		// eviction judged.
		events []*corev1.Pod
		// cache is the informer's cache when the judge runs.
		cache []*corev1.Pod
		want  string // in the violation; "" means none
	}{
		{name: "an eviction within the PDB, judged after a later one",
			events: []*corev1.Pod{a, b, c, evicted(c)}, cache: []*corev1.Pod{a, evicted(b), evicted(c)}},
		{name: "a second eviction while the first pod is still terminating",
			events: []*corev1.Pod{a, b, c, evicted(b), evicted(c)}, cache: []*corev1.Pod{a, evicted(b), evicted(c)},
			want: "eviction of c left 1 healthy pods, PDB web demands 2 of 3"},
		{name: "an eviction that left too few, judged after the pod came back",
			events: []*corev1.Pod{a, evicted(b), c, evicted(c)}, cache: []*corev1.Pod{a, b, evicted(c)},
			want: "eviction of c left 1 healthy pods, PDB web demands 2 of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := NewObserver(ObserverOptions{Config: env.Config, Namespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			o.pods = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range tt.cache {
				if err := o.pods.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			o.nodes = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range tt.events {
				o.onPod(p)
			}
			got := strings.Join(o.Violations(), "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("violation %q, want none", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("violations %q, want one containing %q", got, tt.want)
			}
		})
	}
}
