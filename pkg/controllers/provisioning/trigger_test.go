package provisioning

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

// triggerFixture is a Controller on the test API server with its own
// cluster state, for the pod trigger and the pass loop.
type triggerFixture struct {
	c     *Controller
	state *state.Cluster
	clock *clocktesting.FakeClock
	pod   *corev1.Pod
}

func newTriggerFixture(t *testing.T, solve func(*scheduling.Snapshot) (*scheduling.Plan, error)) *triggerFixture {
	env := test.Env(t)
	clk := clocktesting.NewFakeClock(time.Now())
	// The state sees no Nodes or NodeClaims on the API server, so it is
	// synced whatever other tests of the package left there.
	st, err := state.NewCluster(state.Options{Reader: emptyReader{}, Clock: clk, NominationTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if solve == nil {
		solve = func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(s, scheduling.Options{})
		}
	}
	model, err := livemodel.NewBuilder(livemodel.Options{Client: env.Client, State: st, Nominations: st.Nominations(), CloudProvider: fake.New(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	creator, err := nodeclaims.NewCreator(nodeclaims.Options{Client: env.Client, State: st})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(Options{
		Client: env.Client, State: st, Nominations: st.Nominations(), Model: model, NodeClaims: creator, Recorder: &events.Buffer{}, Clock: clk,
		Solve: solve, BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: env.Namespace(t)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
	}
	env.Create(t, pod)
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.Now(),
	}}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return &triggerFixture{c: c, state: st, clock: clk, pod: pod}
}

// emptyReader lists nothing and finds nothing.
type emptyReader struct{}

func (emptyReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{}, "")
}

func (emptyReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// triggered reports whether the open batch window holds uid, and forgets
// the window.
func (f *triggerFixture) triggered(uid types.UID) bool {
	f.c.batcher.mu.Lock()
	_, ok := f.c.batcher.seen[uid]
	f.c.batcher.mu.Unlock()
	f.c.batcher.reset()
	return ok
}

// TestPodTriggerLeavesPlannedPodsOut: a pending pod opens a batch; once it
// is nominated, kube-scheduler's rewrites of its status open none (in a
// burst they held every batch open to its maximum), and its nomination
// ending early opens one at once.
func TestPodTriggerLeavesPlannedPodsOut(t *testing.T) {
	f := newTriggerFixture(t, nil)
	key := client.ObjectKeyFromObject(f.pod)
	reconcilePod := func() reconcile.Result {
		t.Helper()
		res, err := f.c.reconcilePod(t.Context(), reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if res := reconcilePod(); !f.triggered(f.pod.UID) || res.RequeueAfter != requeuePending {
		t.Fatalf("an unplanned pending pod must open a batch and be checked again: triggered=false or %+v", res)
	}

	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "planned"}}
	f.state.UpdateNodeClaim(nc)
	f.state.Nominations().Nominate(f.pod, nc.Name)
	if res := reconcilePod(); f.triggered(f.pod.UID) || res.RequeueAfter != requeuePending {
		t.Fatalf("a nominated pod must not open a batch, only be checked again: %+v", res)
	}

	// The NodeClaim goes away: the pod needs a plan now, with no event
	// of its own.
	f.state.DeleteNodeClaim(nc.Name)
	if !f.triggered(f.pod.UID) {
		t.Fatal("a nomination that ended early must open a batch")
	}

	// The planned node initialised and kube-scheduler rejected the pod
	// since: others took the room.
	nc = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "filled"}}
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	f.state.UpdateNodeClaim(nc)
	f.state.Nominations().Nominate(f.pod, nc.Name)
	// Renewal falls due half a window before the nomination lapses.
	if res := reconcilePod(); f.triggered(f.pod.UID) || res.RequeueAfter > 2500*time.Millisecond+nominationEndSlack || res.RequeueAfter < 2500*time.Millisecond {
		t.Fatalf("a pod nominated to an initialised node opens no batch and is checked again when its renewal falls due, half its 5 s window before it lapses: %+v", res)
	}
	rejected := f.pod.DeepCopy()
	rejected.Status.Conditions[0].Message = "0/1 nodes are available: 1 Insufficient cpu."
	f.state.UpdatePod(rejected)
	if !f.triggered(f.pod.UID) {
		t.Fatal("a pod rejected after its node initialised must open a batch")
	}

	// A NodeClaim marked for deletion (disruption took it) keeps the
	// nomination live but cannot take the pod: the pod opens batches.
	nc = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "marked"}, Status: v1.NodeClaimStatus{ProviderID: "fake://marked"}}
	f.state.UpdateNodeClaim(nc)
	f.state.Nominations().Nominate(f.pod, nc.Name)
	f.state.MarkForDeletion(nc.Status.ProviderID)
	if reconcilePod(); !f.triggered(f.pod.UID) {
		t.Fatal("a pod nominated to a NodeClaim marked for deletion must open a batch")
	}

	// Due for renewal (the window half gone): the pod opens a batch
	// while its nomination still counts.
	nc = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "renewal"}}
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	f.state.UpdateNodeClaim(nc)
	f.state.Nominations().Nominate(f.pod, nc.Name)
	f.clock.Step(2600 * time.Millisecond)
	if reconcilePod(); !f.triggered(f.pod.UID) {
		t.Fatal("a pod whose nomination is due for renewal must open a batch")
	}

	// Past its window (the NodeClaim initialised long ago), the pod
	// opens batches again.
	nc = &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "expired"}}
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	f.state.UpdateNodeClaim(nc)
	f.state.Nominations().Nominate(f.pod, nc.Name)
	f.clock.Step(time.Minute)
	if reconcilePod(); !f.triggered(f.pod.UID) {
		t.Fatal("a pod whose nomination window passed must open a batch")
	}
}

// TestFailedPassIsRetried: a pass that fails (a NodeClaim create lost to a
// transient API error) runs again a second later without any pod event,
// and the retries back off while passes keep failing.
func TestFailedPassIsRetried(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		if got := failedPassRetry(n); got != want {
			t.Errorf("failedPassRetry(%d) = %s, want %s", n, got, want)
		}
	}

	var (
		passes atomic.Int32
		mu     sync.Mutex
		at     []time.Time
		f      *triggerFixture
	)
	f = newTriggerFixture(t, func(s *scheduling.Snapshot) (*scheduling.Plan, error) {
		mu.Lock()
		at = append(at, f.clock.Now())
		mu.Unlock()
		if passes.Add(1) == 1 {
			return nil, errors.New("transient")
		}
		return scheduling.Solve(s, scheduling.Options{})
	})
	f.state.UpdatePod(f.pod)
	ctx := t.Context()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.c.Provisioner.Start(ctx)
	}()
	t.Cleanup(func() { <-done })
	f.c.Trigger(f.pod.UID)
	// Step the fake clock until the second pass ran: one idle window, the
	// retry delay, and the retry's idle window.
	deadline := time.Now().Add(30 * time.Second)
	for passes.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the failed pass was not retried: %d passes", passes.Load())
		}
		if f.clock.HasWaiters() {
			f.clock.Step(500 * time.Millisecond)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// The retry's second plus the batch's idle second, stepped by halves.
	if gap := at[1].Sub(at[0]); gap > 2500*time.Millisecond {
		t.Fatalf("the second pass ran %s after the failed one, want about 2 s", gap)
	}
}
