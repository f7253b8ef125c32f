package chaos

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
	"github.com/joiner-dev/joiner/pkg/test"
)

// The harness drives joiner (it may use joiner's API types to create
// objects); the observer (observer.go) judges it without joiner's code.

var binary test.JoinerBinary

// plantedBinary is joiner built with the chaosbugs tag, for
// TestPlantedBugs: it plants the bugs JOINER_PLANTED_BUGS names.
var plantedBinary = test.JoinerBinary{Tags: "chaosbugs"}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "joiner-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: creating the joiner binary's directory:", err)
		os.Exit(1)
	}
	binary.Dir = dir
	plantedBinary.Dir = filepath.Join(dir, "planted")
	if err := os.MkdirAll(plantedBinary.Dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: creating the planted joiner binary's directory:", err)
		os.Exit(1)
	}
	code := test.Run(m, controlPlaneOptions())
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "removing the joiner binaries' directory:", err)
	}
	os.Exit(code)
}

func controlPlaneOptions() controlplane.Options {
	opts := controlplane.Options{
		Scheduler: true, ControllerManager: true, Kwok: true,
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         test.Scheme(),
	}
	// CHAOS_CP_RUNDIR keeps the control plane's directory and logs, with
	// kube-controller-manager verbose enough that its taint-eviction
	// controller names the taints it acts on (see the README).
	if dir := os.Getenv("CHAOS_CP_RUNDIR"); dir != "" {
		opts.RunDir = dir
		opts.ExtraArgs = map[string][]string{"kube-controller-manager": {"-v=4"}}
	}
	return opts
}

// TestChaos runs seeded rounds on the simulated cloud. CHAOS_ROUNDS
// (default 1) and CHAOS_SEED (default 1) choose them, after the sim's
// regression rounds; `make chaos` runs more. A failing round prints its
// seed and fault schedule.
func TestChaos(t *testing.T) {
	runRounds(t, &simCloud{})
}

// runRounds runs the cloud's regression rounds, then CHAOS_ROUNDS rounds
// from CHAOS_SEED (only those when CHAOS_SEED is set: a reproduction).
func runRounds(t *testing.T, cloud cloudHarness) {
	rounds, seed := 1, uint64(1)
	if s := os.Getenv("CHAOS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("CHAOS_ROUNDS=%q: want a number of rounds", s)
		}
		rounds = n
	}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: want an unsigned integer", s)
		}
		seed = n
	}
	// CHAOS_UNTIL (an RFC 3339 time) is when a run stops starting rounds,
	// so that a soak sharing a machine with a deadline ends by it; the
	// round under way when it passes runs to its end.
	var until time.Time
	if s := os.Getenv("CHAOS_UNTIL"); s != "" {
		u, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("CHAOS_UNTIL=%q: want an RFC 3339 time such as 2026-11-29T12:45:00Z", s)
		}
		until = u
	}
	var seeds []uint64
	if os.Getenv("CHAOS_SEED") == "" {
		for _, r := range regressions {
			if r.Cloud == cloud.name() {
				seeds = append(seeds, r.Seed)
			}
		}
	}
	for i := range rounds {
		if s := seed + uint64(i); !slices.Contains(seeds, s) {
			seeds = append(seeds, s)
		}
	}
	setup := time.Now()
	w := newWorld(t, cloud)
	defer w.teardown() // before the replicas stop (cleanups)
	t.Logf("the %s world (control plane, cloud, namesake cluster, observer) took %.0fs to start", cloud.name(), time.Since(setup).Seconds())
	for _, s := range seeds {
		if !until.IsZero() && time.Now().After(until) {
			t.Logf("CHAOS_UNTIL %s has passed: no round started from seed %d on", until.Format(time.RFC3339), s)
			break
		}
		if !w.round(t, s) {
			break // the world is in an unknown state; one failure is enough
		}
	}
}

// cloudHarness is what a round needs from a cloud: how to start it, a
// node class, a replica's flags with the round's cloud faults, the
// namesake cluster, and the cloud's own inventory for the observer.
type cloudHarness interface {
	name() string
	// start readies the cloud for w's cluster.
	start(t *testing.T, w *world)
	// nodeClass is the NodePool's node class (to create) and its reference.
	nodeClass(t *testing.T, w *world) (client.Object, *v1.NodeClassReference)
	// requirements narrow the NodePool to small, cheap nodes.
	requirements() []v1.NodeSelectorRequirementWithMinValues
	// replica returns a replica's cloud flags and environment with f's
	// call faults, and describes the faults.
	replica(t *testing.T, w *world, f sim.CallFaults) (args, env []string, desc string)
	// namesake runs a second cluster with w's cluster name on the same
	// cloud, waits until it owns instances and returns its identity.
	namesake(t *testing.T, w *world) Identity
	// observed is the cloud's own inventory.
	observed() Cloud
	// faultsMet summarises the cloud faults the replicas met.
	faultsMet(replicas []*replica) string
}

// world is one cluster under test with its replicas, a namesake cluster
// on the same cloud, and the observer.
type world struct {
	// t is the whole test's: replicas outlive a round.
	t           *testing.T
	cloud       cloudHarness
	env         *test.Environment
	ns          string
	clusterName string
	nodeClass   client.Object
	nodePool    *v1.NodePool
	web         *appsv1.Deployment
	replicas    []*replica
	started     int // replicas started so far, for names and seeds
	observer    *Observer
	roundSeed   uint64
	// schedule is the round's, as it runs (its faults' outcomes filled in).
	schedule *schedule
	// planted is the bug the cluster's replicas run with (none: "");
	// ghostAtLeast raises the replicas' ghost-instance rate.
	planted      plantedbug.Bug
	ghostAtLeast float64
	// big rounds (CHAOS_SIZE=big, make chaos-soak) scale the workload to
	// 100-120 pods over dozens of nodes and raise the cloud's fault rates.
	big bool
	// offeringsTTL is the replicas' --unavailable-offerings-ttl.
	offeringsTTL time.Duration
	cancel       context.CancelFunc
	// logMu guards logTo, the round's t.Logf (the whole test's between
	// rounds): replicas' supervisors log from their own goroutines.
	logMu sync.Mutex
	logTo func(string, ...any)
}

// log writes to the log of the round under way.
func (w *world) log(format string, args ...any) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	w.logTo(format, args...)
}

// setLog makes log write to logf.
func (w *world) setLog(logf func(string, ...any)) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	w.logTo = logf
}

func newWorld(t *testing.T, cloud cloudHarness) *world {
	env := test.Env(t)
	w := &world{t: t, cloud: cloud, env: env, ns: env.Namespace(t), clusterName: "chaos", logTo: t.Logf, big: os.Getenv("CHAOS_SIZE") == "big"}
	w.offeringsTTL = offeringsUnavailableTTL
	if s := os.Getenv("CHAOS_OFFERINGS_TTL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("CHAOS_OFFERINGS_TTL=%q: want a positive duration such as 3m", s)
		}
		w.offeringsTTL = d
	}
	// One node at a time keeps a small round's disruptions in view. A big
	// round disrupts half its NodePool's nodes at once: with Karpenter's
	// default 10% (CHAOS_BUDGET=10% replays it) a budget that shrinks with
	// the NodePool emptied the last of a hundred nodes one per command,
	// and the drift step took 4-5 minutes, most of it waiting on single-node
	// terminations (README, "Where a big round's time goes"). Half keeps
	// as many terminations, launches and cloud faults, in fewer, larger,
	// more concurrent commands.
	budget := "1"
	if w.big {
		budget = "50%"
	}
	if b := os.Getenv("CHAOS_BUDGET"); b != "" {
		budget = b
	}
	cloud.start(t, w)
	var ref *v1.NodeClassReference
	w.nodeClass, ref = cloud.nodeClass(t, w)
	w.nodePool = &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "np")},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: ref,
				Requirements: append([]v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				}, cloud.requirements()...),
				ExpireAfter: v1.MustParseNillableDuration("720h"),
			}},
			Disruption: v1.Disruption{
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    v1.MustParseNillableDuration("2s"),
				Budgets:             []v1.Budget{{Nodes: budget}},
			},
		},
	}
	env.Create(t, w.nodeClass, w.nodePool)

	// The namesake cluster: its instances exist before ours and must
	// survive every round.
	foreign := cloud.namesake(t, w)
	self, err := ClusterIdentity(t.Context(), env.Config, w.clusterName)
	if err != nil {
		t.Fatal(err)
	}

	// A do-not-disrupt pod whose node must outlive every round, and the
	// PDB-protected workload the rounds scale.
	w.deployment(t, "dnd", 1, func(p *corev1.PodTemplateSpec) {
		p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
	})
	w.web = w.deployment(t, "web", 0, nil)
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: w.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	})

	w.observer, err = NewObserver(ObserverOptions{Config: env.Config, Cloud: cloud.observed(), Cluster: self, Foreign: foreign, Namespace: w.ns, NodePool: w.nodePool.Name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	if err := w.observer.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// startNamesake starts a second API server (another kube-system UID)
// with nodeClass and w's NodePool, runs ready on it, then a single joiner
// for it with args (and env), and gives it two pending pods.
func (w *world) startNamesake(t *testing.T, nodeClass client.Object, ready func(*test.Environment), args func(*test.Environment) []string, env []string) *test.Environment {
	opts := controlPlaneOptions()
	opts.Scheduler, opts.ControllerManager, opts.Kwok = false, false, false
	opts.RunDir = "" // its own temporary directory, never the kept one
	b := test.Start(t, opts)
	np := w.nodePool.DeepCopy()
	for _, o := range []client.Object{nodeClass, np} {
		o.SetResourceVersion("")
		o.SetUID("")
		if err := b.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	if ready != nil {
		ready(b)
	}
	// The namesake's Nodes never become Ready (its control plane runs no
	// kwok), so at its own 15-minute initialization or registration TTL
	// its joiner would terminate its own instances, and the observer,
	// which sees only the cloud, would blame the cluster under test (big
	// EC2 round 3004). Its instances must outlive any round.
	namesakeArgs := append(args(b), "--registration-ttl=24h", "--initialization-ttl=24h")
	test.StartJoiner(t, binary.Path(t), "namesake", namesakeArgs, env)
	for i := range 2 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{v1.LabelNodePool: np.Name},
				Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}},
			},
		}
		if err := b.Client.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		// No scheduler there: mark the pods unschedulable as it would.
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
		if err := b.Client.Status().Update(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// namesakeIdentity waits until the namesake cluster owns instances and
// returns its identity.
func (w *world) namesakeIdentity(t *testing.T, b *test.Environment) Identity {
	id, err := ClusterIdentity(t.Context(), b.Config, w.clusterName)
	if err != nil {
		t.Fatal(err)
	}
	cloud := w.cloud.observed()
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		live, err := cloud.Live(ctx, id)
		if err != nil {
			return err
		}
		if len(live) == 0 {
			return fmt.Errorf("the namesake cluster has no instance yet")
		}
		return nil
	})
	return id
}

// joinerArgs are a replica's flags: fast garbage collection and
// disruption so a round sees them, and the cloud's flags.
func (w *world) joinerArgs(kubeconfig string, single bool, cloudArgs ...string) []string {
	args := []string{
		"controller",
		"--kubeconfig=" + kubeconfig,
		"--cluster-name=" + w.clusterName,
		"--metrics-port=0",
		"--health-probe-port=0",
		"--leader-election-name=" + w.clusterName + "-" + w.ns,
		"--gc-interval=1s",
		"--gc-grace-period=5s",
		"--disruption-poll-interval=1s",
		"--disruption-validation-period=2s",
		"--unavailable-offerings-ttl=" + w.offeringsTTL.String(),
		"--log-level=debug",
	}
	if single {
		args = append(args, "--disable-leader-election")
	}
	return append(args, cloudArgs...)
}

func (w *world) deployment(t *testing.T, name string, replicas int32, mutate func(*corev1.PodTemplateSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{v1.LabelNodePool: w.nodePool.Name},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				}},
			}},
		},
	}
	if mutate != nil {
		mutate(&tmpl)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl,
		},
	}
	w.env.Create(t, d)
	return d
}

// faultsFor draws a replica's cloud call faults from the round's seed.
func faultsFor(r *rand.Rand, seed uint64) sim.CallFaults {
	pick := func(xs ...float64) float64 { return xs[r.IntN(len(xs))] }
	return sim.CallFaults{
		Seed:        seed,
		Throttle:    pick(0, 0.05, 0.15),
		ServerError: pick(0, 0.05, 0.1),
		Capacity:    pick(0, 0.05, 0.1),
		Slow:        pick(0, 0.2),
		SlowFor:     time.Duration(1+r.IntN(3)) * time.Second,
		Ghost:       pick(0.1, 0.2, 0.3),
	}
}

// startReplica starts one more replica with faults drawn for it and
// describes it.
func (w *world) startReplica(r *rand.Rand) string {
	w.started++
	f := faultsFor(r, w.roundSeed*100+uint64(w.started))
	f.Ghost = max(f.Ghost, w.ghostAtLeast)
	if w.big {
		// Every big round meets dozens of failed calls, ghosts included.
		f.Throttle, f.ServerError = max(f.Throttle, 0.1), max(f.ServerError, 0.1)
		f.Capacity, f.Ghost = max(f.Capacity, 0.05), max(f.Ghost, 0.2)
	}
	name := fmt.Sprintf("replica-%d", w.started)
	cloudArgs, env, desc := w.cloud.replica(w.t, w, f)
	bin := binary.Path(w.t)
	if w.planted != "" {
		bin = plantedBinary.Path(w.t)
		env = append(env, plantedbug.EnvVar+"="+string(w.planted))
		desc += " planted bug " + string(w.planted)
	}
	j := startReplicaProcess(w.t, w.log, name, bin, w.joinerArgs(w.env.ControlPlane.KubeconfigPath(), false, cloudArgs...), env)
	w.replicas = append(w.replicas, j)
	w.log("started %s (pid %d) with cloud faults %s", name, j.current().Pid(), desc)
	return name + " " + desc
}

// leader returns the alive replica holding the lease, waiting for a
// failover to finish.
func (w *world) leader(ctx context.Context) *replica {
	var found *replica
	_ = test.Poll(ctx, 40*time.Second, func(context.Context) error {
		for _, r := range w.replicas {
			if j := r.current(); j.Alive() && leads(j) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no replica leads")
	})
	return found
}

// leads reports whether j's log says it acquired the lease.
func leads(j *test.JoinerProcess) bool {
	return j.LogContains("successfully acquired lease") || j.LogContains("Successfully acquired lease")
}

// fault is one scheduled fault: what, and the phase it waits for.
type fault struct {
	What  string // "kill-leader" or "restart-apiserver"
	Phase string // launch, registration, drain, consolidation
	// Outcome is filled in as the round runs.
	Outcome string
}

func (f fault) String() string {
	s := f.What + "@" + f.Phase
	if f.Outcome != "" {
		s += " (" + f.Outcome + ")"
	}
	return s
}

// schedule is a round's plan, drawn from its seed.
type schedule struct {
	Cloud         string
	Seed          uint64
	Up, Down      int32
	Faults        []fault
	ReplicaFaults []string
}

func (s *schedule) String() string {
	var fs []string
	for _, f := range s.Faults {
		fs = append(fs, f.String())
	}
	return fmt.Sprintf("cloud %s, seed %d: web 0 -> %d -> %d replicas; faults [%s]; replica cloud faults [%s]",
		s.Cloud, s.Seed, s.Up, s.Down, strings.Join(fs, ", "), strings.Join(s.ReplicaFaults, " | "))
}

func plan(seed uint64, big bool) (*schedule, *rand.Rand) {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "chaos-%d", seed) // a hash never fails to write
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	s := &schedule{Seed: seed, Up: int32(4 + r.IntN(5)), Down: int32(1 + r.IntN(2))}
	if big {
		// The same draws, scaled: 100-120 pods, down to 10-20.
		s.Up, s.Down = 100+(s.Up-4)*5, 10*s.Down
	}
	phases := []string{"launch", "registration", "drain", "consolidation"}
	// One or two kills of the leader, sometimes an API server restart.
	for _, i := range r.Perm(len(phases))[:1+r.IntN(2)] {
		s.Faults = append(s.Faults, fault{What: "kill-leader", Phase: phases[i]})
	}
	if r.IntN(2) == 0 {
		s.Faults = append(s.Faults, fault{What: "restart-apiserver", Phase: phases[r.IntN(len(phases))]})
	}
	return s, r
}

// offeringsUnavailableTTL is how long the replicas of a round skip an
// offering after a capacity error (--unavailable-offerings-ttl; joiner's
// default is Karpenter's 3 minutes, CHAOS_OFFERINGS_TTL=3m replays it).
// What a round tests of that cache keeps at 30 s. On the local EC2 a
// capacity fault answers every override of the CreateFleet, so all of a
// NodeClaim's offerings are marked and the pool still meets a window in
// which nothing can launch; 30 s is many disruption passes (1 s),
// validations (2 s) and provisioning batches long, each of which must
// hold its candidates and pending pods rather than delete a node before
// its replacement. On the simulated cloud a fault marks one offering and
// the launch goes on with the next, at any TTL. And every such window
// now ends inside the round, so the cache's expiry (offerings back, the
// held commands going on) is met in every round, not only in those whose
// drift step outlasts 3 minutes. What the shorter TTL drops is the wait
// alone: a seed-3003 EC2 round spent 3 of its 6 minutes in it.
const offeringsUnavailableTTL = 30 * time.Second

// round runs one seeded round and reports whether it passed.
func (w *world) round(t *testing.T, seed uint64) bool {
	return t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
		cpLogs := w.env.ControlPlane.LogDir()
		cpMarks := markLogs(cpLogs)
		// Deferred: a wait that gives up ends the round with t.Fatal.
		defer func() {
			s := w.schedule
			if s == nil {
				return
			}
			if t.Failed() {
				t.Logf("REPRODUCE: make chaos CLOUD=%s ROUNDS=1 SEED=%d\nschedule: %s", s.Cloud, seed, s)
			}
			if t.Failed() || os.Getenv("CHAOS_LOGS") != "" {
				dir := w.keepLogs(t, s)
				if dir != "" && t.Failed() {
					if err := keepLogsSince(cpLogs, cpMarks, filepath.Join(dir, "cp")); err != nil {
						t.Logf("keeping the control plane's logs: %v", err)
					} else {
						t.Logf("the control plane's logs of the round kept in %s", filepath.Join(dir, "cp"))
					}
				}
			}
		}()
		_, problems := w.play(t, seed)
		for _, p := range problems {
			t.Error(p)
		}
	})
}

// play runs one seeded round and returns its schedule and the broken
// promises it found (none: the round passed).
func (w *world) play(t *testing.T, seed uint64) (*schedule, []string) {
	var problems []string
	w.setLog(t.Logf)
	defer w.setLog(w.t.Logf)
	w.roundSeed = seed
	s, r := plan(seed, w.big)
	s.Cloud = w.cloud.name()
	w.schedule = s
	notesBefore := len(w.observer.Notes())
	clock := newRoundClock()
	defer func() {
		restarts := restartsReport(w.replicas[len(w.replicas)-len(s.ReplicaFaults):])
		if len(problems) == 0 && !t.Failed() {
			t.Logf("round %s passed: %s; %s", s, clock, restarts)
		} else {
			t.Logf("round %s: %s; %s", s, clock, restarts)
		}
	}()
	// Each round's replicas draw their faults from its seed.
	for _, r := range w.replicas {
		r.stop()
	}
	for range 2 {
		s.ReplicaFaults = append(s.ReplicaFaults, w.startReplica(r))
	}
	clock.step("replicas")
	ctx := t.Context()

	wait := 3 * time.Minute
	if w.big {
		wait = 12 * time.Minute
	}
	w.scale(t, s.Up)
	w.injectAt(t, r, s, "launch", "registration")
	test.Eventually(t, wait, func(ctx context.Context) error {
		return w.webRunning(ctx, s.Up)
	})
	clock.step("scale-up")

	w.scale(t, s.Down)
	w.injectAt(t, r, s, "drain", "consolidation")
	clock.step("scale-down")
	// Drift in the same round: every node launched so far drifts, and
	// those running web pods are replaced (each replace waits for its
	// replacement to initialise: the observer judges it).
	drifted := w.driftNodes(t)
	// A capacity fault on a replacement's launch leaves the pool's
	// offerings unavailable for the replicas' TTL (as Karpenter's
	// unavailable-offerings cache), and drift can replace nothing until it
	// ends: the wait covers it (a seed-1 EC2 round met one at 3m exactly,
	// with Karpenter's TTL).
	driftWait := wait + w.offeringsTTL
	started := time.Now()
	stopReports := whileWaiting(stallEvery, func() {
		w.logStall(ctx, fmt.Sprintf("drift step not over after %s", time.Since(started).Round(time.Second)), drifted)
	})
	err := test.Poll(ctx, driftWait, w.webOffDrifted(drifted))
	stopReports()
	if err != nil {
		problems = append(problems, fmt.Sprintf("drifted nodes not replaced in %s: %v", driftWait, err))
		w.logStall(ctx, "drifted nodes not replaced", drifted)
	}
	clock.step("drift")
	// Settled, and still settled a while later (consolidation had its
	// chance to act again).
	for range 2 {
		if unsettled := w.observer.CheckSettled(ctx, 2*time.Minute); len(unsettled) > 0 {
			problems = append(problems, fmt.Sprintf("not settled 2m after the last fault:\n  %s", strings.Join(unsettled, "\n  ")))
			break
		}
		time.Sleep(8 * time.Second)
	}
	clock.step("settle")
	if v := w.observer.Violations(); len(v) > 0 {
		problems = append(problems, fmt.Sprintf("observer saw %d violations:\n  %s", len(v), strings.Join(v, "\n  ")))
	}
	// The observer lives as long as the world: this round's notes are
	// those since it began.
	if n := w.observer.Notes()[notesBefore:]; len(n) > 0 {
		t.Logf("observer noted (no promise of joiner's broken):\n  %s", strings.Join(n, "\n  "))
	}
	roundReplicas := w.replicas[len(w.replicas)-len(s.ReplicaFaults):]
	for _, r := range roundReplicas {
		// Every process the replica ran: a restart hides no crash.
		for _, j := range r.processes() {
			b, _ := os.ReadFile(j.LogPath)
			for _, bad := range []string{"panic:", "DATA RACE", "fatal error:"} {
				if strings.Contains(string(b), bad) {
					problems = append(problems, fmt.Sprintf("%s's log holds %q:\n%s", j.Name, bad, j.Tail(60)))
				}
			}
		}
	}
	t.Logf("cloud faults met by the round's replicas: %s", w.cloud.faultsMet(roundReplicas))
	if len(problems) > 0 {
		// What each replica still running was doing (a stalled controller
		// says nothing in its log), for the kept logs; the next round
		// starts fresh replicas.
		for _, r := range roundReplicas {
			if r.alive() {
				r.dumpStacks()
				w.log("%s's goroutines dumped to its log (SIGQUIT)", r.name)
			}
		}
	}
	return s, problems
}

// keepLogs copies the round's replicas' logs out of the test's temporary
// directories, which go when the test ends, and says where: under
// CHAOS_LOGS when it is set (every round's, passed or not), else in a new
// temporary directory. It returns that directory ("" if it could not make
// one); a failed round's control-plane logs join them there (cplogs_test.go).
func (w *world) keepLogs(t *testing.T, s *schedule) string {
	dir, err := os.MkdirTemp(os.Getenv("CHAOS_LOGS"), fmt.Sprintf("joiner-chaos-%s-%d-", s.Cloud, s.Seed))
	if err != nil {
		t.Logf("keeping the replicas' logs: %v", err)
		return ""
	}
	for _, r := range w.replicas[len(w.replicas)-len(s.ReplicaFaults):] {
		for name, path := range r.logs() {
			if b, err := os.ReadFile(path); err == nil {
				_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
			}
		}
	}
	t.Logf("replica logs kept in %s", dir)
	return dir
}

func (w *world) scale(t *testing.T, n int32) {
	d := &appsv1.Deployment{}
	if err := w.env.Client.Get(t.Context(), client.ObjectKeyFromObject(w.web), d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(n)
	if err := w.env.Client.Patch(t.Context(), d, patch); err != nil {
		t.Fatal(err)
	}
	w.log("web scaled to %d", n)
}

func (w *world) webRunning(ctx context.Context, n int32) error {
	var pods corev1.PodList
	if err := w.env.Client.List(ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{"app": "web"}); err != nil {
		return err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	if running != int(n) {
		return fmt.Errorf("%d of %d web pods running", running, n)
	}
	return nil
}

// injectAt runs the schedule's faults of these phases, in order, each as
// soon as its phase is under way.
func (w *world) injectAt(t *testing.T, r *rand.Rand, s *schedule, phases ...string) {
	for _, phase := range phases {
		for i := range s.Faults {
			f := &s.Faults[i]
			if f.Phase != phase {
				continue
			}
			if !w.waitPhase(t.Context(), phase) {
				f.Outcome = "phase not seen in 45s, injected anyway"
			}
			switch f.What {
			case "kill-leader":
				leader := w.leader(t.Context())
				if leader == nil {
					f.Outcome += "no leader to kill"
					continue
				}
				leader.kill()
				w.log("kill -9 %s (leader) during %s", leader.name, phase)
				s.ReplicaFaults = append(s.ReplicaFaults, w.startReplica(r))
			case "restart-apiserver":
				w.log("restarting kube-apiserver during %s", phase)
				if err := w.env.ControlPlane.RestartAPIServer(t.Context(), 2*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if f.Outcome == "" {
				f.Outcome = "done"
			}
		}
	}
}

// waitPhase waits until the cluster is in phase: a NodeClaim launching
// (no provider ID yet), registering (launched, no Node yet), a node
// draining (its NodeClaim deleting, the Node still there), or a node
// tainted for disruption (consolidation's decision taken).
func (w *world) waitPhase(ctx context.Context, phase string) bool {
	err := test.Poll(ctx, 45*time.Second, func(ctx context.Context) error {
		var claims v1.NodeClaimList
		if err := w.env.Client.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name}); err != nil {
			return err
		}
		for _, c := range claims.Items {
			switch phase {
			case "launch":
				if c.Status.ProviderID == "" && c.DeletionTimestamp == nil {
					return nil
				}
			case "registration":
				if c.Status.ProviderID != "" && c.Status.NodeName == "" && c.DeletionTimestamp == nil {
					return nil
				}
			case "drain":
				if c.DeletionTimestamp != nil && c.Status.NodeName != "" {
					return nil
				}
			}
		}
		if phase == "consolidation" {
			var nodes corev1.NodeList
			if err := w.env.Client.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name}); err != nil {
				return err
			}
			for _, n := range nodes.Items {
				for _, taint := range n.Spec.Taints {
					if taint.Key == v1.TaintKeyDisrupted {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("phase %s not under way", phase)
	})
	return err == nil
}

// teardown scales the workload away and lets the replicas give the nodes
// back, then stops the observer.
func (w *world) teardown() {
	defer w.cancel()
	// The replicas give the nodes back, then are not restarted as the
	// test's cleanups stop them.
	defer func() {
		for _, r := range w.replicas {
			r.end()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := w.env.Client
	_ = c.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(w.ns))
	var nodes corev1.NodeList
	_ = c.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name})
	for _, n := range nodes.Items {
		w.observer.AllowNodeDeletion(n.Name)
	}
	var claims v1.NodeClaimList
	_ = c.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name})
	for i := range claims.Items {
		_ = c.Delete(ctx, &claims.Items[i])
	}
	_ = test.Poll(ctx, 30*time.Second, func(ctx context.Context) error {
		var claims v1.NodeClaimList
		if err := c.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name}); err != nil {
			return err
		}
		if len(claims.Items) > 0 {
			return fmt.Errorf("%d NodeClaims left", len(claims.Items))
		}
		return nil
	})
	// Whatever a failed round left: drop finalizers so the namespace goes.
	_ = c.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name})
	for i := range claims.Items {
		patch := client.MergeFrom(claims.Items[i].DeepCopy())
		claims.Items[i].Finalizers = nil
		_ = c.Patch(ctx, &claims.Items[i], patch)
	}
	_ = c.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name})
	for i := range nodes.Items {
		patch := client.MergeFrom(nodes.Items[i].DeepCopy())
		nodes.Items[i].Finalizers = nil
		_ = c.Patch(ctx, &nodes.Items[i], patch)
		_ = c.Delete(ctx, &nodes.Items[i])
	}
}

// driftNodes changes the NodePool's template (a label), so every node
// launched before drifts and joiner replaces those running pods. It
// returns the nodes that drift.
func (w *world) driftNodes(t *testing.T) map[string]bool {
	ctx := t.Context()
	var nodes corev1.NodeList
	if err := w.env.Client.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: w.nodePool.Name}); err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, n := range nodes.Items {
		before[n.Name] = true
	}
	np := &v1.NodePool{}
	if err := w.env.Client.Get(ctx, client.ObjectKeyFromObject(w.nodePool), np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	if np.Spec.Template.ObjectMeta.Labels == nil {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{}
	}
	np.Spec.Template.ObjectMeta.Labels["chaos.joiner.dev/generation"] = strconv.FormatUint(w.roundSeed, 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := w.env.Client.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	w.log("NodePool %s's template changed: its %d nodes drift", np.Name, len(before))
	return before
}

// webOffDrifted is nil once no web pod runs on a node of drifted, apart
// from the node of the do-not-disrupt pod (which no drift may take).
func (w *world) webOffDrifted(drifted map[string]bool) func(context.Context) error {
	return func(ctx context.Context) error {
		var pods corev1.PodList
		if err := w.env.Client.List(ctx, &pods, client.InNamespace(w.ns)); err != nil {
			return err
		}
		held := map[string]bool{}
		for _, p := range pods.Items {
			if p.Labels["app"] == "dnd" {
				held[p.Spec.NodeName] = true
			}
		}
		for _, p := range pods.Items {
			if p.Labels["app"] == "web" && drifted[p.Spec.NodeName] && !held[p.Spec.NodeName] {
				return fmt.Errorf("web pod %s still on drifted node %s", p.Name, p.Spec.NodeName)
			}
		}
		return nil
	}
}
