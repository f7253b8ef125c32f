package realise_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestKubeSchedulerBreaksTiesAsTheReplayAllows: node e and a new c4
// both have 1 of 4 cpu used; the command sends small pods s1 and s2 to e
// and s3 with a large pod (2.5 cpu and the accelerator only the c4 has)
// to the c4. Created smallest first, s1 ties e and the c4, and
// kube-scheduler takes whichever its filters listed first (v1.36 breaks
// ties by that order, which this test turns by creating the Nodes in
// either order; earlier versions picked at random): if it takes e, the
// large pod finds its room on the c4; if it takes the c4 and a later tie
// breaks the same way, the c4 keeps 2 cpu and the large pod goes pending.
// The replay must refuse the command (taking the first tied node, it
// passed it), and on every run kube-scheduler must bind each pod to one
// of the nodes the replay's scores tie at the top, and leave pending only
// a pod the replay, following the same choices, finds no room for.
func TestKubeSchedulerBreaksTiesAsTheReplayAllows(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	s1, s2, s3 := small("s1"), small("s2"), small("s3")
	accelerator := corev1.ResourceName("example.com/accelerator")
	large := pod("large", "2500m", ownedBy("large"), func(p *corev1.Pod) {
		r := &p.Spec.Containers[0].Resources
		r.Requests[accelerator] = resource.MustParse("1")
		r.Limits = corev1.ResourceList{accelerator: resource.MustParse("1")}
	})
	pending := pod("pending", "1")
	in := input(t,
		node{name: "e", it: "c4", pods: []*corev1.Pod{pod("resident", "1")}},
		node{name: "a", it: "c2", pods: []*corev1.Pod{s1, s2, s3}},
		node{name: "b", it: "c4", pods: []*corev1.Pod{large}},
	)
	withAccelerator := instanceType(4)
	withAccelerator.Capacity[accelerator] = resource.MustParse("1")
	c4 := newClaim(withAccelerator, pending, s3, large)
	cmd := &disruption.Command{
		Method: disruption.MethodMultiNode, Candidates: []string{"a", "b"}, Replacements: []*scheduling.NewNodeClaim{c4},
		Moves: []disruption.Move{
			{Pod: s1, From: "a", To: "e", Replacement: -1}, {Pod: s2, From: "a", To: "e", Replacement: -1},
			{Pod: s3, From: "a", Replacement: 0}, {Pod: large, From: "b", Replacement: 0},
		},
	}
	if _, why := disruption.Realise(in, cmd); why.Pod != "default/large" {
		t.Errorf("the replay says %q; want the large pod stranded on some tie choice", why)
	}
	stranded := 0
	for i := range 4 {
		got := realiseAlong(t, in, cmd, i%2 == 1)
		t.Logf("replacement created first %v: kube-scheduler bound %v", i%2 == 1, got)
		if got["large"] == "" {
			stranded++
		}
	}
	// The proof that the tie matters: some run strands the large pod.
	if stranded == 0 {
		t.Errorf("kube-scheduler broke every tie toward e: the test no longer shows the tie choice that strands the large pod")
	}
}

// newClaim is a replacement of type it carrying ps.
func newClaim(it *scheduling.InstanceType, ps ...*corev1.Pod) *scheduling.NewNodeClaim {
	return &scheduling.NewNodeClaim{NodePool: "default", InstanceTypes: []*scheduling.InstanceType{it}, Pods: ps, Requests: pods.SumRequests(ps)}
}
