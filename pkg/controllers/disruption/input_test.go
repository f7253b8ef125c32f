package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestInputMarksNominatedNodes: the engine's input says a node is
// nominated exactly while the state's nominations hold pending pods for
// its NodeClaim, so a node pods are waiting for is never disrupted
// (Karpenter's rule; the engine's own tests show a nominated node is no
// candidate).
func TestInputMarksNominatedNodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// nominate nominates the pending pod to "busy"; release then
		// releases it (the provisioner found no room for it).
		nominate, release bool
		want              bool
	}{
		{name: "a pod nominated to its NodeClaim", nominate: true, want: true},
		{name: "no nomination"},
		{name: "the nomination released", nominate: true, release: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t)
			u.node("busy")
			u.node("idle")
			pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
			if tc.nominate {
				u.state.Nominations().Nominate(pending, "busy")
			}
			if tc.release {
				u.state.Nominations().Release(pending)
			}
			in, err := u.ctrl.buildInput(u.ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, n := range in.Nodes {
				got[n.Name] = n.Nominated
			}
			if len(got) != 2 {
				t.Fatalf("input nodes %v, want busy and idle", got)
			}
			if got["busy"] != tc.want || got["idle"] {
				t.Errorf("Nominated: busy %v (want %v), idle %v (want false)", got["busy"], tc.want, got["idle"])
			}
		})
	}
}

// TestInputHoldsReplacementsInFlight: while a command waits on its
// replacements, the engine sees each replacement's node as nominated (no
// candidate, not counted against budgets), as its candidates' pods are
// bound for it. Chaos aws 3090: an emptiness command deleted a drift
// command's replacement that had initialised but was still empty, 4 s
// before the command would have moved the candidate's pods onto it.
// Once the command finished, the node is a node like any other.
func TestInputHoldsReplacementsInFlight(t *testing.T) {
	u := newUnit(t)
	n1 := u.node("n1")
	cmd := &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1)); err != nil {
		t.Fatal(err)
	}
	// The replacement registers a Node and initialises.
	name := u.prov.created[0]
	pid := "fake:///" + name
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name, Labels: map[string]string{v1.LabelNodePool: pool}}, Spec: corev1.NodeSpec{ProviderID: pid}}
	if err := u.kube.Create(u.ctx, node); err != nil {
		t.Fatal(err)
	}
	nc := u.getClaim(name)
	nc.Status.ProviderID, nc.Status.NodeName = pid, node.Name
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	if err := u.kube.Status().Update(u.ctx, nc); err != nil {
		t.Fatal(err)
	}
	u.state.UpdateNode(node)
	u.state.UpdateNodeClaim(u.getClaim(name))

	nominated := func() (bool, bool) {
		t.Helper()
		in, err := u.ctrl.buildInput(u.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range in.Nodes {
			if n.Name == node.Name {
				return n.Nominated, n.Disrupting
			}
		}
		t.Fatalf("input lacks the replacement's node %s", node.Name)
		return false, false
	}
	if nom, dis := nominated(); !nom || dis {
		t.Errorf("replacement of a command in flight: Nominated %v, Disrupting %v; want nominated, not disrupting (budgets count disrupting nodes)", nom, dis)
	}
	u.ctrl.queue.Process(u.ctx) // every replacement initialised: the command finishes
	if u.ctrl.queue.Len() != 0 {
		t.Fatalf("command still in flight after its replacement initialised")
	}
	if nom, _ := nominated(); nom {
		t.Error("replacement still held after its command finished")
	}
}
