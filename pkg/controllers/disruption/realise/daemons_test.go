package realise_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestKubeSchedulerCountsDaemonsAtNonZeroDefaults: kube-scheduler's
// NodeResourcesFit counts a container that requests no cpu or memory at
// 100m and 200 MiB, the DaemonSet pods on a node included. Node e
// (on-demand) runs the agent DaemonSet's pod; a new spot c4 runs the
// agent's and the spot termination handler's, neither requesting
// anything, so it is the fuller of the two and w's first pod goes to e,
// the second to the c4. kube-scheduler must bind both where the replay
// puts them (a replay that counted the daemons at their requests saw the
// c4 empty and put the first pod there).
func TestKubeSchedulerCountsDaemonsAtNonZeroDefaults(t *testing.T) {
	noRequests := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }
	daemon := func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: p.Name, UID: "ds-" + p.UID, Controller: &yes}}
	}
	agent := pod("agent", "0", daemon, noRequests)
	handler := pod("handler", "0", daemon, noRequests, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.LabelCapacityType: "spot"}
	})
	w1, w2 := pod("w1", "1", ownedBy("w")), pod("w2", "1", ownedBy("w"))
	in := input(t,
		node{name: "e", it: "c4", pods: []*corev1.Pod{pod("agent-e", "0", daemon, noRequests)}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{w1, w2}},
	)
	in.Cluster.DaemonSets = []*corev1.Pod{agent, handler}
	spot := instanceType(4)
	spot.Offerings = append(spot.Offerings, scheduling.Offering{Zone: "z1", CapacityType: "spot", Price: 2, Available: true})
	cmd := &disruption.Command{
		Method: disruption.MethodMultiNode, Candidates: []string{"a"}, Replacements: []*scheduling.NewNodeClaim{newClaim(spot, w2)},
		Moves: []disruption.Move{{Pod: w1, From: "a", To: "e", Replacement: -1}, {Pod: w2, From: "a", Replacement: 0}},
	}
	placed, why := disruption.Realise(in, cmd)
	if !why.IsZero() {
		t.Fatalf("the replay strands a pod: %v", why)
	}
	want := map[string]string{}
	for _, p := range placed {
		want[p.Pod.Name] = destination(p)
	}
	if want["w1"] != "e" || want["w2"] != replacementName(0) {
		t.Errorf("the replay puts w1 on %q and w2 on %q; want e and %s", want["w1"], want["w2"], replacementName(0))
	}
	got := realiseAlong(t, in, cmd, false)
	for name, node := range want {
		if got[name] != node {
			t.Errorf("%s: kube-scheduler bound it to %q, the replay put it on %q", name, got[name], node)
		}
	}
}
