package lifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
)

func (u *unit) deleted(name string) bool {
	nc := &v1.NodeClaim{}
	err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, nc)
	return err != nil || nc.DeletionTimestamp != nil
}

func TestLivenessDeletesANodeClaimThatNeverRegisters(t *testing.T) {
	u := newUnit(t, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	u.launch(testNodeClaim("live-noreg"))

	u.clock.Step(10 * time.Minute)
	res := u.reconcile("live-noreg")
	if u.deleted("live-noreg") {
		t.Fatalf("deleted before the registration TTL")
	}
	if res.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue when the TTL runs out: got %s, want 5m", res.RequeueAfter)
	}

	u.clock.Step(5 * time.Minute)
	u.reconcile("live-noreg")
	if !u.deleted("live-noreg") {
		t.Fatalf("a NodeClaim not registered within 15m is deleted")
	}
	var onNodeClaim, onNodePool bool
	for _, e := range u.events.Events() {
		if e.Reason != events.RegistrationTimeout {
			continue
		}
		switch e.Regarding.(type) {
		case *v1.NodeClaim:
			onNodeClaim = true
		case *v1.NodePool:
			onNodePool = true
		}
		contains(t, e.Message, "15m0s", "journalctl -u kubelet", "aws-auth", "access entry", "userData", "architecture")
	}
	if !onNodeClaim || !onNodePool {
		t.Errorf("the explanation is published on the NodeClaim (%v) and its NodePool (%v)", onNodeClaim, onNodePool)
	}
}

func TestLivenessLeavesRegisteredNodeClaimsAlone(t *testing.T) {
	u := newUnit(t)
	nc := u.launch(testNodeClaim("live-reg"))
	u.create(registeringNode("node-live-reg", nc.Status.ProviderID, "amd64", corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}))
	u.reconcile("live-reg")
	u.clock.Step(time.Hour)
	u.reconcile("live-reg")
	if u.deleted("live-reg") {
		t.Fatalf("a registered NodeClaim (still initializing) is not deleted by liveness")
	}
}

func TestLivenessDeletesANodeClaimThatNeverLaunches(t *testing.T) {
	u := newUnit(t)
	u.cloud.CreateError = errFull
	u.create(testNodeClaim("live-nolaunch"))
	if _, err := u.ctrl.Reconcile(u.ctx, requestFor("live-nolaunch")); err == nil {
		t.Fatalf("want a launch error")
	}
	u.clock.Step(5 * time.Minute)
	_, _ = u.ctrl.Reconcile(u.ctx, requestFor("live-nolaunch"))
	if !u.deleted("live-nolaunch") {
		t.Fatalf("a NodeClaim that does not launch within 5m is deleted")
	}
	contains(t, u.event(events.LaunchTimeout).Message, "did not launch within 5m0s", "subnet full")
}
