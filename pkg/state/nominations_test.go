package state

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// Nominations serves its readers and its writer through the two narrow
// interfaces.
var (
	_ NominationReader = (*Nominations)(nil)
	_ Nominator        = (*Nominations)(nil)
)

// TestNominationsAnswerTheirReaders: what each reader asks of a pod's
// nomination (does it hold, to which NodeClaim, until when; where is the
// pod going; which pods does a NodeClaim wait for), as the model around it
// changes. The TTL is a minute; the NodeClaim nc-1 is in the model unless
// a case removes it.
func TestNominationsAnswerTheirReaders(t *testing.T) {
	web := types.NamespacedName{Namespace: "ns", Name: "web"}
	for _, tc := range []struct {
		name string
		// nominateTo is the NodeClaim the pod is nominated to ("" for a
		// node joiner does not manage).
		nominateTo string
		// then changes the model (and the clock) after the nomination.
		then func(c *Cluster, clk *clocktesting.FakeClock)
		// holds, holdsUntil: Holds' answer (until after the plan): half a
		// window before the nomination lapses, when the provisioner plans
		// the pod again while the nomination still counts.
		holds      bool
		holdsUntil time.Duration
		// nominated, node: Nomination's answer.
		nominated bool
		node      string
		// waitingOnNC1 are PodsNominatedTo("nc-1"); counted, the pods
		// nc-1's StateNode counts as nominated.
		waitingOnNC1 []types.NamespacedName
		counted      int
	}{
		{
			name: "nominated to an in-flight NodeClaim: held until the longest wait for its initialisation", nominateTo: "nc-1",
			holds: true, holdsUntil: MaxNominationHold - 30*time.Second, nominated: true,
			waitingOnNC1: []types.NamespacedName{web}, counted: 1,
		},
		{
			name: "once its node initialised: held for the window from the initialisation", nominateTo: "nc-1",
			then: func(c *Cluster, clk *clocktesting.FakeClock) {
				clk.Step(10 * time.Second)
				c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			},
			holds: true, holdsUntil: 10*time.Second + 30*time.Second, nominated: true,
			waitingOnNC1: []types.NamespacedName{web}, counted: 1,
		},
		{
			name: "half a window before it lapses: due for renewal (not held), still counted", nominateTo: "nc-1",
			then: func(c *Cluster, clk *clocktesting.FakeClock) {
				c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
				clk.Step(30 * time.Second)
			},
			nominated: true, waitingOnNC1: []types.NamespacedName{web}, counted: 1,
		},
		{
			name: "the NodeClaim's Node registered: the pod's node is named", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) {
				c.UpdateNodeClaim(nodeClaim("nc-1", "default", "sim:///i-1"))
				c.UpdateNode(node("node-1", "sim:///i-1", nil))
			},
			holds: true, holdsUntil: MaxNominationHold - 30*time.Second, nominated: true, node: "node-1",
			waitingOnNC1: []types.NamespacedName{web}, counted: 1,
		},
		{
			name: "the NodeClaim marked for deletion by disruption: not held, still nominated", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) {
				c.UpdateNodeClaim(nodeClaim("nc-1", "default", "sim:///i-1"))
				c.MarkForDeletion("sim:///i-1")
			},
			nominated: true, waitingOnNC1: []types.NamespacedName{web}, counted: 1,
		},
		{
			name: "the NodeClaim being deleted: the nomination ends", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) {
				nc := nodeClaim("nc-1", "default", "")
				nc.DeletionTimestamp = &metav1.Time{Time: epoch}
				c.UpdateNodeClaim(nc)
			},
		},
		{
			name: "the NodeClaim gone: the nomination ends", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) { c.DeleteNodeClaim("nc-1") },
		},
		{
			name: "nominated to a NodeClaim the model does not hold: not held, still nominated", nominateTo: "nc-elsewhere",
			nominated: true,
		},
		{
			name: "past the window: not held, still nominated (the writer keeps its value), no longer counted", nominateTo: "nc-1",
			then: func(c *Cluster, clk *clocktesting.FakeClock) {
				c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
				clk.Step(time.Minute)
			},
			nominated: true, waitingOnNC1: []types.NamespacedName{web},
		},
		{
			name: "the pod bound: no nomination", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) { c.UpdatePod(pod("ns", "web", "node-9", "1")) },
		},
		{
			name: "the pod released (no room anywhere): no nomination", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) { c.Nominations().Release(pod("ns", "web", "", "1")) },
		},
		{
			name: "placed on a node joiner does not manage: a decision, no nomination", nominateTo: "",
		},
		{
			// Its NodeClaim marked for deletion, the pod was planned again
			// onto a node joiner does not manage: the new plan replaces the
			// old nomination, so nc-1 no longer counts the pod (nor the
			// writer keeps its status.nominatedNodeName there).
			name: "planned again onto a node joiner does not manage: the old nomination ends", nominateTo: "nc-1",
			then: func(c *Cluster, _ *clocktesting.FakeClock) {
				c.UpdateNodeClaim(nodeClaim("nc-1", "default", "sim:///i-1"))
				c.MarkForDeletion("sim:///i-1")
				c.Nominations().Nominate(pod("ns", "web", "", "1"), "")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			start := clk.Now()
			c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
			var n NominationReader = c.Nominations()
			c.Nominations().Nominate(pod("ns", "web", "", "1"), tc.nominateTo)
			if tc.then != nil {
				tc.then(c, clk)
			}

			nc, until, held := n.Holds(web)
			if held != tc.holds || (held && (nc != tc.nominateTo || !until.Equal(start.Add(tc.holdsUntil)))) {
				t.Errorf("Holds = %q until +%s, %v; want %q until +%s, %v", nc, until.Sub(start), held, tc.nominateTo, tc.holdsUntil, tc.holds)
			}
			got, ok := n.Nomination(web)
			if ok != tc.nominated || (ok && (got.NodeClaim != tc.nominateTo || got.Node != tc.node)) {
				t.Errorf("Nomination = %+v, %v; want {%s %s}, %v", got, ok, tc.nominateTo, tc.node, tc.nominated)
			}
			if waiting := n.PodsNominatedTo("nc-1"); !slices.Equal(waiting, tc.waitingOnNC1) {
				t.Errorf("PodsNominatedTo(nc-1) = %v, want %v", waiting, tc.waitingOnNC1)
			}
			counted, nominated := 0, false
			for _, sn := range c.ReadOnlyNodes() {
				if sn.NodeClaim != nil && sn.NodeClaim.Name == "nc-1" {
					counted, nominated = len(sn.NominatedPods), sn.Nominated()
				}
			}
			if counted != tc.counted || nominated != (tc.counted > 0) {
				t.Errorf("nc-1 counts %d nominated pods (Nominated %v), want %d", counted, nominated, tc.counted)
			}
		})
	}
}

// TestNominationsRecordWhatTheWriterWrote: the status.nominatedNodeName
// values joiner wrote are the writer's record, per pod and per node, and
// deleting the pod forgets them.
func TestNominationsRecordWhatTheWriterWrote(t *testing.T) {
	a, b, other := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	for _, tc := range []struct {
		name   string
		writes func(n *Nominations)
		then   func(c *Cluster)
		// want is what NominatedNodeName says per pod ("" for none);
		// onNode1 the pods PodsWithNominatedNodeName("node-1") lists.
		want    map[types.NamespacedName]string
		onNode1 []types.NamespacedName
	}{
		{
			name:    "written",
			writes:  func(n *Nominations) { n.SetNominatedNodeName(b, "node-1"); n.SetNominatedNodeName(a, "node-1") },
			want:    map[types.NamespacedName]string{a: "node-1", b: "node-1", other: ""},
			onNode1: []types.NamespacedName{a, b},
		},
		{
			name: "moved and cleared",
			writes: func(n *Nominations) {
				n.SetNominatedNodeName(a, "node-1")
				n.SetNominatedNodeName(b, "node-1")
				n.SetNominatedNodeName(a, "node-2")
				n.SetNominatedNodeName(b, "")
			},
			want: map[types.NamespacedName]string{a: "node-2", b: ""},
		},
		{
			name:   "the pod deleted",
			writes: func(n *Nominations) { n.SetNominatedNodeName(a, "node-1") },
			then:   func(c *Cluster) { c.DeletePod(a) },
			want:   map[types.NamespacedName]string{a: ""},
		},
		{
			name:    "the pod bound: still recorded (the writer clears it)",
			writes:  func(n *Nominations) { n.SetNominatedNodeName(a, "node-1") },
			then:    func(c *Cluster) { c.UpdatePod(pod("ns", "a", "node-1", "1")) },
			want:    map[types.NamespacedName]string{a: "node-1"},
			onNode1: []types.NamespacedName{a},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newTestCluster(t)
			tc.writes(c.Nominations())
			if tc.then != nil {
				tc.then(c)
			}
			for pod, want := range tc.want {
				got, ok := c.Nominations().NominatedNodeName(pod)
				if got != want || ok != (want != "") {
					t.Errorf("NominatedNodeName(%s) = %q, %v; want %q", pod, got, ok, want)
				}
			}
			if got := c.Nominations().PodsWithNominatedNodeName("node-1"); !slices.Equal(got, tc.onNode1) {
				t.Errorf("PodsWithNominatedNodeName(node-1) = %v, want %v", got, tc.onNode1)
			}
		})
	}
}

// TestNominationsTellTheProvisionerWhatEnded: an early end calls the
// provisioner's NotifyEnded at once and is handed out once by TakeEnded,
// with why; a nomination that only ran out its window, or was released,
// is neither.
func TestNominationsTellTheProvisionerWhatEnded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(c *Cluster, clk *clocktesting.FakeClock)
		reason string
	}{
		{name: "the NodeClaim failed", reason: EndedNodeClaimFailed, end: func(c *Cluster, _ *clocktesting.FakeClock) {
			nc := nodeClaim("nc-1", "default", "")
			nc.DeletionTimestamp = &metav1.Time{Time: epoch}
			c.UpdateNodeClaim(nc)
		}},
		{name: "the NodeClaim went away", reason: EndedNodeClaimGone, end: func(c *Cluster, _ *clocktesting.FakeClock) { c.DeleteNodeClaim("nc-1") }},
		{name: "the window ran out", end: func(c *Cluster, clk *clocktesting.FakeClock) {
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			clk.Step(2 * time.Minute)
		}},
		{name: "released", end: func(c *Cluster, _ *clocktesting.FakeClock) { c.Nominations().Release(pod("ns", "web", "", "1")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
			var notified []string
			var w Nominator = c.Nominations()
			w.NotifyEnded(func(p *corev1.Pod) { notified = append(notified, p.Name) })
			w.Nominate(pod("ns", "web", "", "1"), "nc-1")
			tc.end(c, clk)

			ended := w.TakeEnded()
			if tc.reason == "" {
				if len(ended) != 0 || len(notified) != 0 {
					t.Fatalf("not an early end: TakeEnded = %+v, notified %v", ended, notified)
				}
				return
			}
			if len(ended) != 1 || ended[0].Reason != tc.reason || ended[0].NodeClaim != "nc-1" || ended[0].Pod.Name != "web" {
				t.Fatalf("TakeEnded = %+v, want web's nomination to nc-1 ended by %s", ended, tc.reason)
			}
			if !slices.Equal(notified, []string{"web"}) {
				t.Errorf("NotifyEnded's fn was called for %v, want [web]", notified)
			}
			if again := w.TakeEnded(); len(again) != 0 {
				t.Errorf("TakeEnded hands an end out once: %+v", again)
			}
		})
	}
}
