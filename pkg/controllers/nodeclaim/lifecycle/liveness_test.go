package lifecycle

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

func (u *unit) deleted(name string) bool {
	nc := &v1.NodeClaim{}
	err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, nc)
	return err != nil || nc.DeletionTimestamp != nil
}

func TestLivenessDeletesANodeClaimThatNeverRegisters(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"}}
	u := newUnit(t, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, pending)
	u.ctrl.opts.Nominations = nominations{"live-noreg": {client.ObjectKeyFromObject(pending)}}
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

	// The failure backs off the node class for the TTL, recorded on the
	// NodePool, and the NodePool and the waiting pod say so.
	np := &v1.NodePool{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	record, err := launchhealth.Get(np)
	if err != nil || len(record.Backoffs) != 1 {
		t.Fatalf("launch health %+v (%v), want one back-off", record, err)
	}
	if b := record.Backoffs[0]; b.InstanceType != "" || b.Reason != ReasonNodeNotFound || b.Wait.Duration != 15*time.Minute || b.Phase != launchhealth.PhaseRegistration {
		t.Errorf("back-off %+v, want the whole node class, NodeNotFound, waiting 15m", b)
	}
	regarding := map[string]string{}
	for _, e := range u.events.Events() {
		if e.Reason == events.LaunchBackoff {
			regarding[fmt.Sprintf("%T", e.Regarding)] = e.Message
		}
	}
	contains(t, regarding["*v1.NodePool"], "failed to register", "NodeNotFound", "waits 15m0s")
	contains(t, regarding["*v1.Pod"], "nodeclaim/live-noreg of nodepool default", "NodeNotFound", "backs off", "until")
}

type nominations map[string][]types.NamespacedName

func (n nominations) PodsNominatedTo(nodeClaim string) []types.NamespacedName { return n[nodeClaim] }

// TestInitializationTimeout: a registered NodeClaim whose startup taint is
// never removed is left alone for InitializationTTL, then deleted with
// Initialized=False naming the taint, events on the NodeClaim, its Node,
// its NodePool and the pending pod nominated to it, and a record of the
// failure on the NodePool.
func TestInitializationTimeout(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default"}}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "elsewhere"}}
	u := newUnit(t, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, pending, bound)
	u.ctrl.opts.Nominations = nominations{"live-reg": {client.ObjectKeyFromObject(pending), client.ObjectKeyFromObject(bound)}}
	nc := u.launch(testNodeClaim("live-reg"))
	u.create(registeringNode("node-live-reg", nc.Status.ProviderID, "amd64", corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}))
	u.reconcile("live-reg")
	requireCondition(t, u.nodeClaim("live-reg"), v1.ConditionTypeRegistered, metav1.ConditionTrue, "")

	u.clock.Step(14 * time.Minute)
	res := u.reconcile("live-reg")
	if u.deleted("live-reg") {
		t.Fatalf("a registered NodeClaim is not deleted within the initialization TTL")
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("requeue when the initialization TTL runs out: got %s, want at most 1m", res.RequeueAfter)
	}

	u.clock.Step(time.Minute)
	u.reconcile("live-reg")
	if !u.deleted("live-reg") {
		t.Fatalf("a NodeClaim not initialized within 15m of registering is deleted")
	}
	c := requireCondition(t, u.nodeClaim("live-reg"), v1.ConditionTypeInitialized, metav1.ConditionFalse, ReasonStartupTaintsExist)
	contains(t, c.Message, "example.com/agent-not-ready:NoSchedule", "15m0s")
	regarding := map[string]bool{}
	for _, e := range u.events.Events() {
		if e.Reason != events.InitializationTimeout {
			continue
		}
		switch o := e.Regarding.(type) {
		case *v1.NodeClaim, *v1.NodePool, *corev1.Node:
			contains(t, e.Message, "example.com/agent-not-ready:NoSchedule")
			regarding[fmt.Sprintf("%T", o)] = true
		case *corev1.Pod:
			if o.Name != pending.Name {
				t.Errorf("event on pod %s, which is bound elsewhere", o.Name)
			}
			contains(t, e.Message, "nodeclaim/live-reg")
			regarding["pod"] = true
		}
	}
	for _, want := range []string{"*v1.NodeClaim", "*v1.NodePool", "*v1.Node", "pod"} {
		if !regarding[want] {
			t.Errorf("no InitializationTimeout event on the %s; got %v", want, regarding)
		}
	}
	np := &v1.NodePool{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	record, err := launchhealth.Get(np)
	if err != nil || record.LastFailure == nil || len(record.Backoffs) != 1 {
		t.Fatalf("no failure record on the NodePool: %v (%v)", err, np.Annotations)
	}
	if f := record.LastFailure; f.NodeClaim != "live-reg" || f.Reason != ReasonStartupTaintsExist || f.Phase != launchhealth.PhaseInitialization {
		t.Errorf("failure record %+v", f)
	}
	// The initialisation TTL is the first back-off of that instance type.
	if b := record.Backoffs[0]; b.InstanceType == "" || b.Failures != 1 || b.Wait.Duration != 15*time.Minute {
		t.Errorf("back-off %+v, want one failure of an instance type waiting 15m", b)
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
