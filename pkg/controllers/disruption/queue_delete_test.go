package disruption

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
)

// resetDeletes is an API server that went away mid-command: every
// NodeClaim delete fails with a connection reset until it is back.
type resetDeletes struct {
	client.Client
	back     atomic.Bool
	attempts atomic.Int32
}

func (c *resetDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok {
		c.attempts.Add(1)
		if !c.back.Load() {
			return errors.New("read tcp 127.0.0.1:51106->127.0.0.1:36621: read: connection reset by peer")
		}
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// stateOf is the cluster state's view of the named node, and the
// engine's.
func (u *unit) stateOf(name string) (marked bool, n disruption.Node) {
	u.t.Helper()
	u.state.UpdateNode(u.getNode(name))
	for _, sn := range u.state.ReadOnlyNodes() {
		if sn.Name() == name {
			return sn.MarkedForDeletion, u.ctrl.node(sn, nil)
		}
	}
	u.t.Fatalf("%s is not in the cluster state", name)
	return false, disruption.Node{}
}

// A kube-apiserver restart in the middle of a command's deletions (chaos
// round sim 2062: 33 of a 53-node command's deletes failed) is over in
// seconds. Karpenter retries a command's failed deletions until the
// command's time is up; so does joiner: the candidate stays tainted and
// marked meanwhile, and is deleted once the API server is back.
func TestFailedCandidateDeletionIsRetried(t *testing.T) {
	u := newUnit(t)
	n1, n2 := u.node("n1"), u.node("n2")
	c := &resetDeletes{Client: u.kube}
	u.ctrl.opts.Client = c
	cmd := &disruption.Command{Method: disruption.MethodEmptiness, Reason: disruption.ReasonEmpty, Candidates: []string{"n1", "n2"}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1, n2)); err != nil {
		t.Fatal(err)
	}
	// Still down a few seconds later: retried, still waiting.
	for range 3 {
		u.clock.Step(time.Second)
		u.ctrl.queue.Process(u.ctx)
	}
	if got := c.attempts.Load(); got <= 2 {
		t.Fatalf("%d delete attempts for 2 candidates over 3 s: the failed deletions were not retried", got)
	}
	if marked, _ := u.stateOf("n1"); !marked {
		t.Error("a candidate whose deletion is being retried is no longer marked for deletion")
	}
	if !u.ctrl.queue.Has("n1") {
		t.Error("a candidate whose deletion is being retried is not in flight: the clean-up would untaint it")
	}
	c.back.Store(true)
	u.clock.Step(maxDeletionRetryDelay)
	u.ctrl.queue.Process(u.ctx)
	for _, name := range []string{"n1", "n2"} {
		if u.getClaim(name).DeletionTimestamp == nil {
			t.Errorf("%s's NodeClaim was not deleted once the API server was back", name)
		}
	}
	if u.ctrl.queue.Len() != 0 {
		t.Errorf("%d commands still in flight after their candidates were deleted", u.ctrl.queue.Len())
	}
}

// Chaos round sim 2062: a kube-apiserver restart failed the deletes of 22
// of a 53-node emptiness command's candidates. The queue left them marked
// for deletion in the cluster state for good: the engine saw them as
// deleting (never a candidate, and counted against the NodePool's budget),
// so with 44 nodes left under a 50% budget, 22 marked nodes used all of it
// and none of the 44 drifted nodes was replaced for the 11 minutes left.
// A candidate whose deletion failed is not going away: once the finished
// command's memory of it lapses, it must be an ordinary node again.
func TestFailedCandidateDeletionIsNotDeletingForever(t *testing.T) {
	u := newUnit(t)
	n1 := u.node("n1")
	u.ctrl.opts.Client = &resetDeletes{Client: u.kube}
	cmd := &disruption.Command{Method: disruption.MethodEmptiness, Reason: disruption.ReasonEmpty, Candidates: []string{"n1"}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1)); err != nil {
		t.Fatal(err)
	}
	if u.getClaim("n1").DeletionTimestamp != nil {
		t.Fatal("the candidate was deleted through a client whose deletes fail")
	}
	// The queue retries until deletionRetryWindow, then gives up.
	for end := u.clock.Now().Add(deletionRetryWindow); !u.clock.Now().After(end); {
		u.clock.Step(maxDeletionRetryDelay)
		u.ctrl.queue.Process(u.ctx)
	}
	u.clock.Step(finishedMemory + time.Second)
	u.state.UpdateNode(u.getNode("n1"))
	if err := u.ctrl.cleanUp(u.ctx); err != nil {
		t.Fatal(err)
	}
	marked, n := u.stateOf("n1")
	if marked {
		t.Error("the candidate whose deletion failed is still marked for deletion in the cluster state")
	}
	if n.Deleting || n.Disrupting {
		t.Errorf("the engine sees the candidate whose deletion failed as deleting=%t disrupting=%t: it is no candidate and uses its NodePool's budget", n.Deleting, n.Disrupting)
	}
	if v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints) {
		t.Error("the stale disrupted taint was not removed")
	}
}

// namesakeDeletes answers every NodeClaim delete as the API server does
// when the delete's UID precondition fails: the NodeClaim of that UID is
// gone and another holds its name.
type namesakeDeletes struct {
	client.Client
	attempts atomic.Int32
}

func (c *namesakeDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok {
		c.attempts.Add(1)
		return apierrors.NewConflict(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, obj.GetName(),
			errors.New("Precondition failed: UID in precondition: 1, UID in object meta: 2"))
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// A candidate whose NodeClaim is gone and whose name now belongs to
// another NodeClaim is not retried for ten minutes: the UID precondition
// will fail every time, and the namesake is not this command's to delete.
func TestCandidateDeletionOfANamesakeIsNotRetried(t *testing.T) {
	u := newUnit(t)
	n1 := u.node("n1")
	c := &namesakeDeletes{Client: u.kube}
	u.ctrl.opts.Client = c
	cmd := &disruption.Command{Method: disruption.MethodEmptiness, Reason: disruption.ReasonEmpty, Candidates: []string{"n1"}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		u.clock.Step(maxDeletionRetryDelay)
		u.ctrl.queue.Process(u.ctx)
	}
	if got := c.attempts.Load(); got != 1 {
		t.Errorf("%d delete attempts for a candidate whose UID precondition failed, want 1", got)
	}
	if u.ctrl.queue.Len() != 0 {
		t.Errorf("%d commands still in flight for a candidate whose NodeClaim is gone", u.ctrl.queue.Len())
	}
}
