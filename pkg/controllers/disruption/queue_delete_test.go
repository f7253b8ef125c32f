package disruption

import (
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
)

// resetDeletes is an API server that went away mid-command: every
// NodeClaim delete fails with a connection reset.
type resetDeletes struct {
	client.Client
}

func (c *resetDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*v1.NodeClaim); ok {
		return errors.New("read tcp 127.0.0.1:51106->127.0.0.1:36621: read: connection reset by peer")
	}
	return c.Client.Delete(ctx, obj, opts...)
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
	u.state.UpdateNode(u.getNode("n1"))
	u.clock.Step(finishedMemory + time.Second)
	if err := u.ctrl.cleanUp(u.ctx); err != nil {
		t.Fatal(err)
	}
	u.state.UpdateNode(u.getNode("n1"))
	for _, sn := range u.state.ReadOnlyNodes() {
		if sn.Name() != "n1" {
			continue
		}
		if sn.MarkedForDeletion {
			t.Error("the candidate whose deletion failed is still marked for deletion in the cluster state")
		}
		if n := u.ctrl.node(sn, nil); n.Deleting || n.Disrupting {
			t.Errorf("the engine sees the candidate whose deletion failed as deleting=%t disrupting=%t: it is no candidate and uses its NodePool's budget", n.Deleting, n.Disrupting)
		}
		if v1.HasDisruptedTaint(sn.Node.Spec.Taints) {
			t.Error("the stale disrupted taint was not removed")
		}
		return
	}
	t.Fatal("n1 is not in the cluster state")
}
