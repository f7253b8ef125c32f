package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
