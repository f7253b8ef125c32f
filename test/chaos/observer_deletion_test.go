package chaos

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// orderCase is a case of a judge that must count the other pods as the
// pod handler saw them, in the API server's order, not as the informer's
// cache holds them when the judge gets to it.
type orderCase struct {
	name string
	// events reach the pod handler in this order; the last is the one
	// judged.
	events []*corev1.Pod
	// cache is the informer's cache when the judge runs.
	cache []*corev1.Pod
	want  string // in the violation; "" means none
}

func (tt orderCase) run(t *testing.T, f *webFixture) {
	t.Run(tt.name, func(t *testing.T) {
		o := f.observer(t, tt.cache...)
		for _, p := range tt.events {
			o.onPod(p)
		}
		expectJudged(t, o, tt.want, "")
	})
}

// A pod under a PDB deleted without the Eviction API is judged against its
// ReplicaSet as the other pods were when the deletion came. A big EC2
// round (seed 3001) scaled web from 100 to 10; the observer judged the
// ReplicaSet's 90 deletions seconds late, after consolidation had evicted
// one of the 10 kept pods within the PDB, and failed the round for two of
// the ReplicaSet's own deletions ("wanted 10 pods and had 9 other healthy
// ones").
func TestObserverJudgesDeletionsInOrder(t *testing.T) {
	f := newWebFixture(t, true)
	a, b, x := f.pod("a"), f.pod("b"), f.pod("x")
	evicted := disruptedPod(b, "EvictionByEvictionAPI")
	for _, tt := range []orderCase{
		{name: "the ReplicaSet's own scale-down, judged after a later eviction",
			events: []*corev1.Pod{a, b, x, deletedPod(x)}, cache: []*corev1.Pod{a, evicted}},
		{name: "a drain deleting a pod the ReplicaSet still wants",
			events: []*corev1.Pod{a, x, deletedPod(x)}, cache: []*corev1.Pod{a},
			want: "wanted 2 pods and had 1 other healthy ones"},
		{name: "a second pod deleted while one is already evicted",
			events: []*corev1.Pod{a, b, x, evicted, deletedPod(x)}, cache: []*corev1.Pod{a, evicted},
			want: "wanted 2 pods and had 1 other healthy ones"},
	} {
		tt.run(t, f)
	}
}

// An eviction is judged against the other pods as they were when the
// eviction came, as deletions are: a later eviction the PDB allowed (once
// the first evicted pod was gone) must not make the first one look like
// it left too few healthy pods. No pod of the namespace matches in the API
// server, so the PDB expects none and the judge counts the pods it has
// seen (3, maxUnavailable 1: an eviction must leave 2 healthy).
func TestObserverJudgesEvictionsInOrder(t *testing.T) {
	f := newWebFixture(t, false)
	a, b, c := f.pod("a"), f.pod("b"), f.pod("c")
	evicted := func(p *corev1.Pod) *corev1.Pod { return disruptedPod(p, "EvictionByEvictionAPI") }
	for _, tt := range []orderCase{
		{name: "an eviction within the PDB, judged after a later one",
			events: []*corev1.Pod{a, b, c, evicted(c)}, cache: []*corev1.Pod{a, evicted(b), evicted(c)}},
		{name: "a second eviction while the first pod is still terminating",
			events: []*corev1.Pod{a, b, c, evicted(b), evicted(c)}, cache: []*corev1.Pod{a, evicted(b), evicted(c)},
			want: "eviction of c left 1 healthy pods, PDB web demands 2 of 3"},
		{name: "an eviction that left too few, judged after the pod came back",
			events: []*corev1.Pod{a, evicted(b), c, evicted(c)}, cache: []*corev1.Pod{a, b, evicted(c)},
			want: "eviction of c left 1 healthy pods, PDB web demands 2 of 3"},
	} {
		tt.run(t, f)
	}
}
