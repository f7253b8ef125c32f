package disruption

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	fakecloud "github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// These tests drive the executor with chosen commands over
// controller-runtime's fake client and a fake clock: what the queue writes
// (taints, conditions, deletions, rollbacks, the drift halt) and when.
// The e2e package runs the whole decision on a real control plane.

const pool = "default"

type unit struct {
	t      *testing.T
	ctx    context.Context
	kube   client.Client
	clock  *clocktesting.FakeClock
	events *events.Buffer
	state  *state.Cluster
	prov   *fakeProvisioner
	ctrl   *Controller
}

// fakeProvisioner creates replacement NodeClaims the way the provisioner
// does (nodeclaims.NewNodeClaim) without planning anything.
type fakeProvisioner struct {
	kube    client.Client
	state   *state.Cluster
	created []string
	// clock and took make creating a command's replacements take time, as
	// creating hundreds of NodeClaims does on a loaded API server.
	clock *clocktesting.FakeClock
	took  time.Duration
}

// Snapshot holds the state's nodes, as the provisioner's would.
func (f *fakeProvisioner) Build(context.Context) (*livemodel.Snapshot, error) {
	snap := &scheduling.Snapshot{}
	for _, sn := range f.state.Nodes() {
		snap.Nodes = append(snap.Nodes, sn.ExistingNode())
	}
	return &livemodel.Snapshot{Cluster: snap}, nil
}

func (f *fakeProvisioner) CreateReplacements(ctx context.Context, pools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, _ string, _ []types.UID) ([]*v1.NodeClaim, error) {
	var out []*v1.NodeClaim
	for i, p := range planned {
		nc := nodeclaims.NewNodeClaim(pools[p.NodePool], p)
		nc.Name = "replacement-" + string(rune('a'+len(f.created)+i))
		nc.UID = types.UID("uid-" + nc.Name) // the API server would assign one; the fake client does not
		if err := f.kube.Create(ctx, nc); err != nil {
			return out, err
		}
		out = append(out, nc)
	}
	for _, nc := range out {
		f.created = append(f.created, nc.Name)
	}
	if f.took > 0 {
		f.clock.Step(f.took)
	}
	return out, nil
}

func newUnit(t *testing.T) *unit {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Generation: 1}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
	}}}}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(np).WithStatusSubresource(&v1.NodeClaim{}, &v1.NodePool{}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster, err := state.NewCluster(state.Options{Reader: kube, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	u := &unit{t: t, ctx: context.Background(), kube: kube, clock: clk, events: &events.Buffer{}, state: cluster, prov: &fakeProvisioner{kube: kube, state: cluster, clock: clk}}
	u.ctrl, err = NewController(Options{Client: kube, APIReader: kube, CloudProvider: fakecloud.New(), State: cluster, Model: u.prov, NodeClaims: u.prov, Recorder: u.events, Clock: clk, ReplacementTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// node creates an initialised managed node (Node + NodeClaim with the
// termination finalizer, so a deleted NodeClaim stays visible).
func (u *unit) node(name string) disruption.Node {
	return u.nodeOfClass(name, &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"})
}

func (u *unit) nodeOfClass(name string, ref *v1.NodeClassReference) disruption.Node {
	u.t.Helper()
	pid := "sim:///zone-a/" + name
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}}, Spec: corev1.NodeSpec{ProviderID: pid}}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{NodeClassRef: ref}}
	for _, o := range []client.Object{n, nc} {
		if err := u.kube.Create(u.ctx, o); err != nil {
			u.t.Fatal(err)
		}
	}
	nc.Status.ProviderID = pid
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	if err := u.kube.Status().Update(u.ctx, nc); err != nil {
		u.t.Fatal(err)
	}
	u.state.UpdateNode(n)
	u.state.UpdateNodeClaim(nc)
	return disruption.Node{Name: name, Node: n, NodeClaim: nc, NodePool: pool, CapacityType: v1.CapacityTypeOnDemand, Initialized: true}
}

func (u *unit) input(nodes ...disruption.Node) *disruption.Input {
	np := &v1.NodePool{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: pool}, np); err != nil {
		u.t.Fatal(err)
	}
	return &disruption.Input{Now: u.clock.Now(), Nodes: nodes, NodePools: map[string]*v1.NodePool{pool: np}}
}

func (u *unit) getNode(name string) *corev1.Node {
	n := &corev1.Node{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, n); err != nil {
		u.t.Fatal(err)
	}
	return n
}

func (u *unit) getClaim(name string) *v1.NodeClaim {
	nc := &v1.NodeClaim{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		u.t.Fatal(err)
	}
	return nc
}

func (u *unit) initialize(name string) {
	nc := u.getClaim(name)
	nc.StatusConditions().SetTrue(v1.ConditionTypeInitialized)
	if err := u.kube.Status().Update(u.ctx, nc); err != nil {
		u.t.Fatal(err)
	}
}

// launch gives the NodeClaim a provider ID, as its launch would.
func (u *unit) launch(name string) {
	nc := u.getClaim(name)
	nc.Status.ProviderID = "fake:///" + name
	if err := u.kube.Status().Update(u.ctx, nc); err != nil {
		u.t.Fatal(err)
	}
}

// loseFirstReplacementInitialised launches and initialises the command's
// first replacement, lets the queue see it (the command still waits on
// the others), deletes it (kept visible while it terminates when
// finalized, as the termination finalizer keeps a real one) and lets the
// queue look again.
func (u *unit) loseFirstReplacementInitialised(finalized bool) {
	u.t.Helper()
	first := u.prov.created[0]
	u.launch(first)
	u.initialize(first)
	u.ctrl.queue.Process(u.ctx)
	if u.ctrl.queue.Len() != 1 {
		u.t.Fatal("command finished with a replacement not initialised")
	}
	if finalized {
		nc := u.getClaim(first)
		nc.Finalizers = append(nc.Finalizers, v1.TerminationFinalizer)
		if err := u.kube.Update(u.ctx, nc); err != nil {
			u.t.Fatal(err)
		}
	}
	if err := u.kube.Delete(u.ctx, u.getClaim(first)); err != nil {
		u.t.Fatal(err)
	}
	u.ctrl.queue.Process(u.ctx)
}

func replacement() *scheduling.NewNodeClaim {
	return &scheduling.NewNodeClaim{NodePool: pool, Price: 0.1, InstanceTypes: []*scheduling.InstanceType{{Name: "c-2x", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
}

func TestExecute(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *disruption.Command
		// steps run after Execute; each returns nothing and mutates the world.
		steps           func(u *unit)
		wantDeleted     bool
		wantTainted     bool
		wantReason      string // DisruptionReason left on the candidate ("" none)
		wantEvents      []string
		wantDriftHalted bool
	}{
		{
			name:        "delete taints, records the reason and deletes at once",
			cmd:         &disruption.Command{Method: disruption.MethodEmptiness, Reason: disruption.ReasonEmpty, Candidates: []string{"n1"}},
			wantDeleted: true, wantTainted: true, wantReason: "Empty",
			wantEvents: []string{events.DisruptionTerminating},
		},
		{
			name: "replace waits for the replacement to initialise, then deletes",
			cmd:  &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}},
			steps: func(u *unit) {
				u.ctrl.queue.Process(u.ctx)
				if u.getClaim("n1").DeletionTimestamp != nil {
					u.t.Fatal("candidate deleted before its replacement initialized")
				}
				u.initialize(u.prov.created[0])
				u.ctrl.queue.Process(u.ctx)
			},
			wantDeleted: true, wantTainted: true, wantReason: "Underutilized",
			wantEvents: []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionTerminating},
		},
		{
			name: "a replacement that never initialises rolls back at the timeout",
			cmd:  &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}},
			steps: func(u *unit) {
				u.ctrl.queue.Process(u.ctx)
				u.clock.Step(4 * time.Minute)
				u.ctrl.queue.Process(u.ctx)
				if u.ctrl.queue.Len() != 1 {
					u.t.Fatal("rolled back before the timeout")
				}
				u.clock.Step(2 * time.Minute)
				u.ctrl.queue.Process(u.ctx)
			},
			wantEvents: []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionBlocked},
		},
		{
			name: "a drift replacement deleted once running, before it initialises, halts drift for the pool",
			cmd:  &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}},
			steps: func(u *unit) {
				u.launch(u.prov.created[0])
				u.ctrl.queue.Process(u.ctx)
				if err := u.kube.Delete(u.ctx, u.getClaim(u.prov.created[0])); err != nil {
					u.t.Fatal(err)
				}
				u.ctrl.queue.Process(u.ctx)
			},
			wantDriftHalted: true,
			wantEvents:      []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionBlocked, events.DriftHalted},
		},
		{
			// Chaos aws 3090: one of a drift command's three replacements
			// initialised and, empty while the command waited on the other
			// two, was deleted by an emptiness command 4 s later; the queue
			// called that a replacement that failed to initialise and
			// halted drift for the pool for an hour, so the round's drifted
			// nodes were never replaced. A replacement deleted after it
			// initialised did not fail: the command rolls back (its
			// capacity is gone) and drift tries again.
			name:       "a drift replacement deleted after it initialised rolls back without halting drift",
			cmd:        &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement(), replacement()}},
			steps:      func(u *unit) { u.loseFirstReplacementInitialised(true) },
			wantEvents: []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionBlocked},
		},
		{
			// The same when the replacement is already gone by the time
			// the queue looks again: the queue saw it initialised.
			name:       "a drift replacement gone after it initialised rolls back without halting drift",
			cmd:        &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement(), replacement()}},
			steps:      func(u *unit) { u.loseFirstReplacementInitialised(false) },
			wantEvents: []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionBlocked},
		},
		{
			// Issue 34 (chaos rounds with drift): a replacement the cloud
			// had no capacity for halted drift for an hour; Karpenter rolls
			// the command back and drift tries again.
			name: "a drift replacement whose launch failed rolls back without halting drift",
			cmd:  &disruption.Command{Method: disruption.MethodDrift, Reason: disruption.ReasonDrifted, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}},
			steps: func(u *unit) {
				u.ctrl.queue.Process(u.ctx)
				if err := u.kube.Delete(u.ctx, u.getClaim(u.prov.created[0])); err != nil {
					u.t.Fatal(err)
				}
				u.ctrl.queue.Process(u.ctx)
			},
			wantEvents: []string{events.DisruptionLaunching, events.DisruptionWaitingReadiness, events.DisruptionBlocked},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t)
			n1 := u.node("n1")
			decided := testutil.ToFloat64(decisionsTotal.With(commandLabels(tc.cmd)))
			failed := testutil.ToFloat64(queueFailures.With(commandLabels(tc.cmd)))
			disrupted := testutil.ToFloat64(metrics.NodeClaimsDisrupted.WithLabelValues(metricReason(tc.cmd.Reason), pool, v1.CapacityTypeOnDemand))
			if err := u.ctrl.queue.Execute(u.ctx, tc.cmd, u.input(n1)); err != nil {
				t.Fatal(err)
			}
			if !v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints) {
				t.Fatal("candidate not tainted by Execute")
			}
			if sn, _ := u.state.NodeByName("n1"); !sn.MarkedForDeletion {
				t.Fatal("candidate not marked for deletion in the state")
			}
			if tc.steps != nil {
				tc.steps(u)
			}
			nc := u.getClaim("n1")
			if got := nc.DeletionTimestamp != nil; got != tc.wantDeleted {
				t.Errorf("candidate deleted = %v, want %v", got, tc.wantDeleted)
			}
			if got := v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints); got != tc.wantTainted {
				t.Errorf("candidate tainted = %v, want %v", got, tc.wantTainted)
			}
			got := ""
			if c := nc.StatusConditions().Get(v1.ConditionTypeDisruptionReason); c != nil {
				got = c.Reason
			}
			if got != tc.wantReason {
				t.Errorf("DisruptionReason = %q, want %q", got, tc.wantReason)
			}
			if !tc.wantDeleted {
				if sn, _ := u.state.NodeByName("n1"); sn.MarkedForDeletion {
					t.Error("rolled-back candidate still marked for deletion in the state")
				}
			}
			if u.ctrl.queue.Len() != 0 {
				t.Errorf("queue holds %d commands, want none", u.ctrl.queue.Len())
			}
			if got := testutil.ToFloat64(decisionsTotal.With(commandLabels(tc.cmd))) - decided; got != 1 {
				t.Errorf("karpenter_voluntary_disruption_decisions_total rose by %g, want 1", got)
			}
			wantFailed, wantDisrupted := 1.0, 0.0
			if tc.wantDeleted {
				wantFailed, wantDisrupted = 0, 1
			}
			if got := testutil.ToFloat64(queueFailures.With(commandLabels(tc.cmd))) - failed; got != wantFailed {
				t.Errorf("queue_failures_total rose by %g, want %g", got, wantFailed)
			}
			if got := testutil.ToFloat64(metrics.NodeClaimsDisrupted.WithLabelValues(metricReason(tc.cmd.Reason), pool, v1.CapacityTypeOnDemand)) - disrupted; got != wantDisrupted {
				t.Errorf("karpenter_nodeclaims_disrupted_total rose by %g, want %g", got, wantDisrupted)
			}
			reasons := u.events.Reasons()
			for _, want := range tc.wantEvents {
				if !slices.Contains(reasons, want) {
					t.Errorf("events %v lack %s", reasons, want)
				}
			}
			np := &v1.NodePool{}
			if err := u.kube.Get(u.ctx, client.ObjectKey{Name: pool}, np); err != nil {
				t.Fatal(err)
			}
			if halted := np.StatusConditions().IsTrue(ConditionTypeDriftHalted); halted != tc.wantDriftHalted {
				t.Errorf("DriftHalted = %v, want %v", halted, tc.wantDriftHalted)
			}
		})
	}
}

// While drift is halted the Input names the pool in PausedDrift; changing
// the NodePool lifts the halt.
func TestDriftHaltLiftsWhenTheNodePoolChanges(t *testing.T) {
	u := newUnit(t)
	if err := haltDrift(u.ctx, &u.ctrl.opts, pool, "replacement nodeclaim r was deleted before it initialized"); err != nil {
		t.Fatal(err)
	}
	in, err := u.ctrl.buildInput(u.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why := in.PausedDrift[pool]; !strings.Contains(why, "replacement nodeclaim r was deleted") {
		t.Fatalf("PausedDrift[%s] = %q, want the halt's reason", pool, why)
	}
	np := &v1.NodePool{}
	if err := u.kube.Get(u.ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	np.Generation++ // the fake client does not bump it; the API server does on a spec change
	np.Spec.Weight = new(int32)
	*np.Spec.Weight = 5
	if err := u.kube.Update(u.ctx, np); err != nil {
		t.Fatal(err)
	}
	in, err = u.ctrl.buildInput(u.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if why, paused := in.PausedDrift[pool]; paused {
		t.Fatalf("drift still halted after the NodePool changed: %s", why)
	}
}

// A disrupted taint no command accounts for (an interrupted command) is
// removed at the start of a pass; one on a candidate in flight stays.
func TestCleanUpRemovesStaleDisruptedTaints(t *testing.T) {
	u := newUnit(t)
	u.node("stale")
	n2 := u.node("busy")
	if err := taint(u.ctx, u.kube, u.kube, "stale"); err != nil {
		t.Fatal(err)
	}
	cmd := &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"busy"}, Replacements: []*scheduling.NewNodeClaim{replacement()}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n2)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stale", "busy"} {
		n := u.getNode(name)
		u.state.UpdateNode(n)
	}
	if err := u.ctrl.cleanUp(u.ctx); err != nil {
		t.Fatal(err)
	}
	if v1.HasDisruptedTaint(u.getNode("stale").Spec.Taints) {
		t.Error("stale disrupted taint was not removed")
	}
	if !v1.HasDisruptedTaint(u.getNode("busy").Spec.Taints) {
		t.Error("the taint of a candidate in flight was removed")
	}
}

// The pods a finished command evicts count in the trailing hour, and only
// there; DaemonSet pods do not count.
func TestEvictionsLastHour(t *testing.T) {
	u := newUnit(t)
	n1 := u.node("n1")
	for i, owner := range []string{"ReplicaSet", "ReplicaSet", "DaemonSet"} {
		n1.Pods = append(n1.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p" + string(rune('0'+i)), Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{Kind: owner, Name: "x", Controller: ptr.To(true)}},
		}})
	}
	cmd := &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1)); err != nil {
		t.Fatal(err)
	}
	if got := u.ctrl.queue.EvictionsLastHour(); got != 2 {
		t.Fatalf("evictions in the last hour = %d, want 2", got)
	}
	if got := testutil.ToFloat64(evictionsLastHour); got != 2 {
		t.Fatalf("joiner_voluntary_disruption_evictions_last_hour = %g, want 2", got)
	}
	u.clock.Step(61 * time.Minute)
	if got := u.ctrl.queue.EvictionsLastHour(); got != 0 {
		t.Fatalf("an hour later, evictions in the last hour = %d, want 0", got)
	}
}

// NodeClaims of node classes joiner does not serve (Karpenter's own during
// a migration) stay in the snapshot but never reach the engine as nodes.
func TestForeignNodeClaimsAreNeverCandidates(t *testing.T) {
	u := newUnit(t)
	u.node("ours")
	u.nodeOfClass("theirs", &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"})
	in, err := u.ctrl.buildInput(u.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range in.Nodes {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"ours"}) {
		t.Fatalf("input nodes %v, want only [ours]", names)
	}
	if len(in.Cluster.Nodes) != 2 {
		t.Fatalf("snapshot holds %d nodes, want both", len(in.Cluster.Nodes))
	}
}

// A pass over an unchanged cluster that found nothing to do is not
// decided again until something changes or the memo expires.
func TestUnchangedClusterIsNotDecidedAgain(t *testing.T) {
	u := newUnit(t)
	u.node("n1")
	calls := 0
	u.ctrl.decide = func(in *disruption.Input) (*disruption.Decision, error) {
		calls++
		return &disruption.Decision{Verdicts: make([]disruption.Verdict, len(in.Nodes))}, nil
	}
	pass := func() {
		t.Helper()
		if _, err := u.ctrl.Disrupt(u.ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	pass()
	if calls != 1 {
		t.Fatalf("decided %d times on an unchanged cluster, want 1", calls)
	}
	u.state.UpdateNode(u.getNode("n1"))
	pass()
	if calls != 2 {
		t.Fatalf("decided %d times after the state changed, want 2", calls)
	}
	u.clock.Step(memoTTL)
	pass()
	if calls != 3 {
		t.Fatalf("decided %d times after the memo expired, want 3", calls)
	}
}

// A replacement deleted and re-created under the same name by someone else
// ends the command, and the rollback leaves the namesake alone: only the
// object the command created (by UID) may be deleted.
func TestRollbackSparesANamesakeReplacement(t *testing.T) {
	u := newUnit(t)
	n1 := u.node("n1")
	cmd := &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized, Candidates: []string{"n1"}, Replacements: []*scheduling.NewNodeClaim{replacement()}}
	if err := u.ctrl.queue.Execute(u.ctx, cmd, u.input(n1)); err != nil {
		t.Fatal(err)
	}
	u.ctrl.queue.Process(u.ctx)
	name := u.prov.created[0]
	ours := u.getClaim(name)
	// Gone for good: no termination controller runs here to release the
	// termination finalizer the replacement was created with.
	gone := ours.DeepCopy()
	gone.Finalizers = nil
	if err := u.kube.Update(u.ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := u.kube.Delete(u.ctx, ours); err != nil {
		t.Fatal(err)
	}
	namesake := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "namesake-uid", Labels: map[string]string{v1.LabelNodePool: pool}}}
	if err := u.kube.Create(u.ctx, namesake); err != nil {
		t.Fatal(err)
	}
	if got := u.getClaim(name).UID; got == ours.UID {
		t.Fatalf("namesake has the replacement's UID %q; the test cannot tell them apart", got)
	}
	u.ctrl.queue.Process(u.ctx)
	if u.ctrl.queue.Len() != 0 {
		t.Fatal("command still queued after its replacement was deleted")
	}
	if v1.HasDisruptedTaint(u.getNode("n1").Spec.Taints) {
		t.Error("candidate still tainted after the rollback")
	}
	if got := u.getClaim(name); got.DeletionTimestamp != nil {
		t.Error("rollback deleted the namesake NodeClaim, which the command did not create")
	}
}
