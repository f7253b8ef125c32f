package state

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestNominationsCountOnTheirNodeClaimUntilTheyExpire: a nomination holds
// while its NodeClaim has not initialised, however long that takes, and
// one window (the TTL, a minute here) after the plan or the initialisation, whichever
// is later.
func TestNominationsCountOnTheirNodeClaimUntilTheyExpire(t *testing.T) {
	for _, tc := range []struct {
		name string
		// initAfter: when the NodeClaim initialises after the plan.
		initAfter time.Duration
		// liveUntil: the nomination holds until just before this.
		liveUntil time.Duration
	}{
		{"initialised at once: the plan's window", 0, time.Minute},
		{"initialised within the window: a window from the initialisation", 5 * time.Second, time.Minute + 5*time.Second},
		{"initialised after minutes: a window from the initialisation", 3 * time.Minute, 4 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			start := clk.Now()
			nc := nodeClaim("nc-1", "default", "")
			c.UpdateNodeClaim(nc)
			p := pod("ns", "web-1", "", "2")
			key := types.NamespacedName{Namespace: "ns", Name: "web-1"}

			c.Nominations().Nominate(p, "nc-1")
			if target, ok := c.liveNomination(key); !ok || target != "nc-1" {
				t.Fatalf("liveNomination = %q, %v", target, ok)
			}
			sn, _ := c.NodeByName("nc-1")
			if len(sn.NominatedPods) != 1 || cpu(sn.PodRequests()) != "2" {
				t.Fatalf("a nominated pod counts on its NodeClaim: %d pods, requests %s", len(sn.NominatedPods), cpu(sn.PodRequests()))
			}
			if got := len(sn.ExistingNode().Pods); got != 1 {
				t.Fatalf("ExistingNode carries nominated pods: %d", got)
			}

			clk.Step(tc.initAfter)
			if _, ok := c.liveNomination(key); !ok {
				t.Fatalf("the nomination must hold while its NodeClaim has not initialised (%s after the plan)", tc.initAfter)
			}
			c.UpdateNodeClaim(initialized(nc))
			clk.SetTime(start.Add(tc.liveUntil - time.Millisecond))
			if _, ok := c.liveNomination(key); !ok {
				t.Fatalf("the nomination must hold until %s after the plan", tc.liveUntil)
			}
			clk.SetTime(start.Add(tc.liveUntil))
			if _, ok := c.liveNomination(key); ok {
				t.Fatalf("the nomination must expire %s after the plan", tc.liveUntil)
			}
			if sn, _ := c.NodeByName("nc-1"); len(sn.NominatedPods) != 0 {
				t.Fatalf("an expired nomination no longer counts")
			}
		})
	}
}

// TestANominationWaitsForItsNodeClaimAtMostTheHold: a NodeClaim that never
// initialises (of a node class no provider serves, say) holds its pods
// MaxNominationHold after the plan, not forever.
func TestANominationWaitsForItsNodeClaimAtMostTheHold(t *testing.T) {
	c, clk, _ := newTestCluster(t)
	start := clk.Now()
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	key := types.NamespacedName{Namespace: "ns", Name: "web-1"}
	c.Nominations().Nominate(pod("ns", "web-1", "", "1"), "nc-1")
	clk.SetTime(start.Add(MaxNominationHold - time.Second))
	if _, ok := c.liveNomination(key); !ok {
		t.Fatalf("the nomination must hold just under %s", MaxNominationHold)
	}
	clk.SetTime(start.Add(MaxNominationHold))
	if _, ok := c.liveNomination(key); ok {
		t.Fatalf("the nomination must end %s after the plan", MaxNominationHold)
	}
}

func TestBindingOrDeletingEndsANomination(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	c.Nominations().Nominate(pod("ns", "a", "", "1"), "nc-1")
	c.Nominations().Nominate(pod("ns", "b", "", "1"), "nc-1")
	c.Nominations().Nominate(pod("ns", "c", "", "1"), "nc-2")

	c.UpdatePod(pod("ns", "a", "node-1", "1"))
	if _, ok := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "a"}); ok {
		t.Errorf("a bound pod is no longer nominated")
	}
	c.DeletePod(types.NamespacedName{Namespace: "ns", Name: "b"})
	if _, ok := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "b"}); ok {
		t.Errorf("a deleted pod is no longer nominated")
	}
	c.DeleteNodeClaim("nc-2")
	if _, ok := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "c"}); ok {
		t.Errorf("deleting the NodeClaim ends nominations to it")
	}
	c.Nominations().Nominate(pod("ns", "a", "", "1"), "nc-1")
	if _, ok := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "a"}); ok {
		t.Errorf("a pod already bound cannot be nominated")
	}
}

func TestNominationWindowIsKarpenters(t *testing.T) {
	for _, tc := range []struct{ batchMax, want time.Duration }{
		{10 * time.Second, 20 * time.Second},
		{time.Second, 10 * time.Second},
		{30 * time.Second, time.Minute},
	} {
		if got := NominationWindow(tc.batchMax); got != tc.want {
			t.Errorf("NominationWindow(%s) = %s, want %s", tc.batchMax, got, tc.want)
		}
	}
}

// unschedulable is a pending pod as kube-scheduler leaves it after a
// failed attempt: PodScheduled=False, reason Unschedulable, with message.
func unschedulable(name, message string) *corev1.Pod {
	p := pod("ns", name, "", "1")
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: message, LastTransitionTime: metav1.NewTime(epoch),
	}}
	return p
}

func initialized(nc *v1.NodeClaim) *v1.NodeClaim {
	nc = nc.DeepCopy()
	nc.Status.NodeName = "node-1"
	nc.StatusConditions().SetTrue(v1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(v1.ConditionTypeRegistered)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	// The transition time as the API server keeps it, to the second.
	for i := range nc.Status.Conditions {
		if nc.Status.Conditions[i].Type == v1.ConditionTypeInitialized {
			nc.Status.Conditions[i].LastTransitionTime = metav1.NewTime(epoch)
		}
	}
	return nc
}

func TestNominationEndsEarly(t *testing.T) {
	const before, after = "0/3 nodes are available: 3 Insufficient cpu.", "0/4 nodes are available: 4 Insufficient cpu."
	deleting := nodeClaim("nc-1", "default", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
	deleting.Finalizers = []string{v1.TerminationFinalizer}
	for _, tc := range []struct {
		name string
		// steps run after the pod (rejected with message before) is
		// nominated to the launching nc-1.
		steps  func(c *Cluster, clk *clocktesting.FakeClock)
		reason string // "" : the nomination still holds
		// expired: over without a report, its window cut short.
		expired bool
	}{
		{name: "a rejection after the node initialised ends it", reason: EndedNodeFilledUp, steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			c.UpdatePod(unschedulable("web", after))
		}},
		{name: "the same rejection seen again after initialisation does not", steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			c.UpdatePod(unschedulable("web", before))
		}},
		{name: "a rejection before the node initialised does not", steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdatePod(unschedulable("web", after))
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
		}},
		{name: "a rejection seen after the initialisation, before the model learnt of it, leaves the grace", expired: true, steps: func(c *Cluster, clk *clocktesting.FakeClock) {
			// The pod's watch is ahead of the NodeClaim's: the rejection
			// arrives 2 s after the node initialised, the NodeClaim's
			// Initialized condition later.
			clk.Step(2 * time.Second)
			c.UpdatePod(unschedulable("web", after))
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			clk.Step(RejectionGrace + time.Millisecond)
		}},
		{name: "within the grace it still holds", steps: func(c *Cluster, clk *clocktesting.FakeClock) {
			clk.Step(2 * time.Second)
			c.UpdatePod(unschedulable("web", after))
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			clk.Step(RejectionGrace - time.Millisecond)
		}},
		{name: "a rejection seen within the initialisation's second keeps the window", steps: func(c *Cluster, clk *clocktesting.FakeClock) {
			clk.Step(900 * time.Millisecond)
			c.UpdatePod(unschedulable("web", after))
			c.UpdateNodeClaim(initialized(nodeClaim("nc-1", "default", "")))
			clk.Step(RejectionGrace + time.Second)
		}},
		{name: "the NodeClaim being deleted ends it", reason: EndedNodeClaimFailed, steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdateNodeClaim(deleting)
		}},
		{name: "the NodeClaim gone ends it", reason: EndedNodeClaimGone, steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.DeleteNodeClaim("nc-1")
		}},
		{name: "binding ends it silently", steps: func(c *Cluster, _ *clocktesting.FakeClock) {
			c.UpdatePod(pod("ns", "web", "node-1", "1"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, clk, _ := newTestCluster(t)
			c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
			c.UpdatePod(unschedulable("web", before))
			c.Nominations().Nominate(unschedulable("web", before), "nc-1")
			tc.steps(c, clk)
			_, nominated := c.liveNomination(types.NamespacedName{Namespace: "ns", Name: "web"})
			ended := c.Nominations().TakeEnded()
			bound := tc.name == "binding ends it silently" || tc.expired
			switch {
			case tc.reason == "" && !bound:
				if !nominated || len(ended) != 0 {
					t.Fatalf("nominated = %v, ended = %+v; want the nomination to hold", nominated, ended)
				}
			case tc.reason == "":
				if nominated || len(ended) != 0 {
					t.Fatalf("nominated = %v, ended = %+v; want it over without a report", nominated, ended)
				}
			default:
				if nominated || len(ended) != 1 || ended[0].Reason != tc.reason || ended[0].NodeClaim != "nc-1" || ended[0].Pod.Name != "web" {
					t.Fatalf("nominated = %v, ended = %+v; want it ended with %s", nominated, ended, tc.reason)
				}
				if tc.reason == EndedNodeFilledUp && ended[0].Node != "node-1" {
					t.Errorf("the report names node %q, want node-1", ended[0].Node)
				}
				if again := c.Nominations().TakeEnded(); len(again) != 0 {
					t.Errorf("TakeEnded hands each ended nomination out once: %+v", again)
				}
			}
		})
	}
}

func TestReleaseForgetsWithoutAReport(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	p := pod("ns", "web", "", "1")
	c.Nominations().Nominate(p, "nc-1")
	key := types.NamespacedName{Namespace: "ns", Name: "web"}
	c.Nominations().Release(p)
	if _, ok := c.Nominations().Nomination(key); ok {
		t.Fatalf("the nomination must be gone")
	}
	if sn, _ := c.NodeByName("nc-1"); len(sn.NominatedPods) != 0 {
		t.Fatalf("a released pod no longer counts on the NodeClaim")
	}
	if ended := c.Nominations().TakeEnded(); len(ended) != 0 {
		t.Fatalf("Release reports nothing: %+v", ended)
	}
}

// TestNominationKeepsThePodsFields: a nomination keeps the nominated pod's
// fields, not a deep copy of them (the provisioner nominates thousands of
// the informer cache's pods at once in a scale-up), but a Pod struct of its
// own, so the caller's list of pods is not kept alive through it.
func TestNominationKeepsThePodsFields(t *testing.T) {
	c, _, _ := newTestCluster(t)
	c.UpdateNodeClaim(nodeClaim("nc-1", "default", ""))
	pods := []corev1.Pod{*pod("ns", "web-1", "", "2")}
	c.Nominations().Nominate(&pods[0], "nc-1")

	var kept *corev1.Pod
	for _, sn := range c.ReadOnlyNodes() {
		if sn.Name() == "nc-1" && len(sn.NominatedPods) == 1 {
			kept = sn.NominatedPods[0]
		}
	}
	switch {
	case kept == nil:
		t.Fatal("the pod is not nominated to nc-1")
	case kept == &pods[0]:
		t.Error("the model keeps the caller's Pod struct (and with it the caller's list)")
	case &kept.Spec.Containers[0] != &pods[0].Spec.Containers[0]:
		t.Error("the model keeps a deep copy of the nominated pod")
	}
}

// liveNomination returns the NodeClaim pod is nominated to while the
// nomination is live, whether or not the model holds the NodeClaim
// (Holds also asks that): the window's own clock, for the tests.
func (c *Cluster) liveNomination(pod types.NamespacedName) (nodeClaimName string, ok bool) {
	now := c.opts.Clock.Now()
	c.mu.RLock()
	defer c.mu.RUnlock()
	n, ok := c.nom.byPod[pod]
	if !ok || !n.live(now) {
		return "", false
	}
	return n.nodeClaim, true
}
