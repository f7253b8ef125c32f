package operator_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	joinerevents "github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestLatency is the provisioning latency benchmark (issue 13): the time
// from each pod's creation to its Running, per pod, on the simulated cloud
// with its default launch and registration delays. It runs only with
// JOINER_BENCH_LATENCY set (make bench-latency): "1" runs Karpenter's
// example workloads and a 500-pod burst, "all" adds a 5,000-pod burst.
// JOINER_BENCH_BURST=N adds a burst of N pods (bound: 15 minutes).
// JOINER_BENCH_PROFILE=DIR writes, per run, joiner's CPU profile over the
// run, the metrics of joiner and kube-apiserver at its end, joiner's log
// and kube-apiserver's (at level 1, for that setting) into DIR.
// docs/performance.md has the figures.
func TestLatency(t *testing.T) {
	mode := os.Getenv("JOINER_BENCH_LATENCY")
	if mode == "" {
		t.Skip("set JOINER_BENCH_LATENCY=1 (or all) to run the latency benchmark: make bench-latency")
	}
	t.Run("examples", func(t *testing.T) { latencyRun(t, exampleWorkloads, 5*time.Minute) })
	t.Run("burst-500", func(t *testing.T) { latencyRun(t, burst(500), 5*time.Minute) })
	if mode == "all" {
		t.Run("burst-5000", func(t *testing.T) { latencyRun(t, burst(5000), 15*time.Minute) })
	}
	if n := os.Getenv("JOINER_BENCH_BURST"); n != "" {
		size, err := strconv.Atoi(n)
		if err != nil || size <= 0 {
			t.Fatalf("JOINER_BENCH_BURST=%q: want a positive number of pods", n)
		}
		t.Run(fmt.Sprintf("burst-%d", size), func(t *testing.T) { latencyRun(t, burst(int32(size)), 15*time.Minute) })
	}
}

// workload creates one group of pods in the scenario and returns how many.
type workload struct {
	name  string
	apply func(s *scenario, name string) int32
}

// plainDeployment is n pods of 1 CPU and 1 GiB, as Karpenter's inflate.
func plainDeployment(n int32, mutate func(*corev1.PodSpec)) func(*scenario, string) int32 {
	return func(s *scenario, name string) int32 {
		s.deployment(name, n, "1", "1Gi", mutate)
		return n
	}
}

func burst(n int32) []workload {
	return []workload{{name: "inflate", apply: plainDeployment(n, nil)}}
}

func spreadOver(name string, keys ...string) func(*corev1.PodSpec) {
	return func(spec *corev1.PodSpec) {
		for _, k := range keys {
			spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: k, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			})
		}
	}
}

// exampleWorkloads are Karpenter's examples/workloads, 100 pods together.
var exampleWorkloads = []workload{
	{name: "inflate", apply: plainDeployment(12, nil)},
	{name: "arm64", apply: plainDeployment(12, func(spec *corev1.PodSpec) {
		spec.NodeSelector[v1.LabelArch] = "arm64"
	})},
	{name: "spot", apply: plainDeployment(12, func(spec *corev1.PodSpec) {
		spec.NodeSelector[v1.LabelCapacityType] = v1.CapacityTypeSpot
	})},
	{name: "prefer-arm", apply: plainDeployment(12, func(spec *corev1.PodSpec) {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 50, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
			}}},
		}}
	})},
	{name: "spread-zone", apply: plainDeployment(12, spreadOver("spread-zone", v1.LabelTopologyZone))},
	{name: "spread-hostname", apply: plainDeployment(10, spreadOver("spread-hostname", v1.LabelHostname))},
	{name: "spread-hostname-zone", apply: plainDeployment(12, spreadOver("spread-hostname-zone", v1.LabelHostname, v1.LabelTopologyZone))},
	{name: "pdb", apply: func(s *scenario, name string) int32 {
		s.env.Create(s.t, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(8)),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			},
		})
		return plainDeployment(12, nil)(s, name)
	}},
	{name: "gpu-nvidia", apply: plainDeployment(6, func(spec *corev1.PodSpec) {
		gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		spec.Containers[0].Resources.Limits = gpu
		spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = gpu["nvidia.com/gpu"]
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	})},
}

// podTimes is when the benchmark first saw each pod and saw it Running.
type podTimes struct {
	created map[types.UID]time.Time
	running map[types.UID]time.Time
	group   map[types.UID]string
	// gone are pods deleted (a replaced pod's replacement must run too).
	gone map[types.UID]bool
	// steps is each pod's timeline as the watch saw it: its
	// PodScheduled condition, nominatedNodeName and binding changing.
	steps map[types.UID][]step
	last  map[types.UID]*corev1.Pod
	names map[types.UID]string
	// bound is when each pod was first seen bound, since apply.
	bound map[types.UID]time.Duration
}

// step is one change of a pod, at a time since apply.
type step struct {
	at   time.Duration
	what string
}

// observe records what changed in pod since the last version seen.
func (p *podTimes) observe(pod *corev1.Pod, at time.Duration) {
	prev := p.last[pod.UID]
	if prev == nil {
		prev = &corev1.Pod{}
	}
	var what []string
	if c, was := podCondition(pod, corev1.PodScheduled), podCondition(prev, corev1.PodScheduled); c != nil && (was == nil || c.Status != was.Status || c.Message != was.Message) {
		what = append(what, fmt.Sprintf("PodScheduled=%s %q", c.Status, c.Message))
	}
	if pod.Status.NominatedNodeName != prev.Status.NominatedNodeName {
		what = append(what, fmt.Sprintf("nominatedNodeName=%q", pod.Status.NominatedNodeName))
	}
	if pod.Spec.NodeName != prev.Spec.NodeName {
		what = append(what, "bound to "+pod.Spec.NodeName)
		if _, seen := p.bound[pod.UID]; !seen && pod.Spec.NodeName != "" {
			p.bound[pod.UID] = at
		}
	}
	if pod.Status.Phase != prev.Status.Phase {
		what = append(what, string(pod.Status.Phase))
	}
	if len(what) > 0 {
		p.steps[pod.UID] = append(p.steps[pod.UID], step{at: at, what: strings.Join(what, ", ")})
	}
	p.last[pod.UID] = pod
	p.names[pod.UID] = pod.Name
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// live counts the Running pods not deleted.
func (p *podTimes) live() int {
	n := 0
	for uid := range p.running {
		if !p.gone[uid] {
			n++
		}
	}
	return n
}

// latencyRun applies the workloads at once and reports, per group and
// overall, the pending → Running time of every pod.
func latencyRun(t *testing.T, workloads []workload, timeout time.Duration) {
	s := newScenario(t)
	s.nodeClass.Spec.LaunchDelay.Duration = simv1alpha1.DefaultLaunchDelay
	s.nodeClass.Spec.RegistrationDelay.Duration = simv1alpha1.DefaultRegistrationDelay
	s.nodePool.Spec.Template.Spec.Requirements = append(s.nodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})
	s.apply()
	prof := startProfiling(t, s)

	// The benchmark's own watches of pods and Nodes speak protobuf, as
	// kube-scheduler, kube-controller-manager and joiner do: a JSON watcher
	// makes the API server encode every event of the burst once more.
	cfg := rest.CopyConfig(s.env.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	// A RetryWatcher from the namespace's list: a watch the API server
	// closes under load resumes where it stopped.
	list, err := kube.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kube.CoreV1().Pods(s.ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	nodes := watchNodes(ctx, t, kube, s.nodePool.Name)
	times := &podTimes{created: map[types.UID]time.Time{}, running: map[types.UID]time.Time{}, group: map[types.UID]string{}, gone: map[types.UID]bool{},
		steps: map[types.UID][]step{}, last: map[types.UID]*corev1.Pod{}, names: map[types.UID]string{}, bound: map[types.UID]time.Duration{}}

	start := time.Now()
	var want int
	for _, wl := range workloads {
		want += int(wl.apply(s, wl.name))
	}
	applied := time.Since(start)
	timedOut := false
watching:
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			// Report what ran by then: under heavy machine load a run
			// may not finish, and the partial figures still compare.
			timedOut = true
			break watching
		case e, open := <-w.ResultChan():
			if !open {
				t.Fatalf("the pod watch ended with %d of %d pods Running", times.live(), want)
			}
			ev = e
		}
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		now := time.Now()
		times.observe(pod, now.Sub(start))
		if ev.Type == watch.Deleted || pod.DeletionTimestamp != nil {
			if !times.gone[pod.UID] && times.group[pod.UID] != "" {
				t.Logf("pod %s (%s) deleted %.1fs after apply; its replacement counts instead", pod.Name, pod.Spec.NodeName, time.Since(start).Seconds())
			}
			times.gone[pod.UID] = true
			continue
		}
		if _, seen := times.created[pod.UID]; !seen {
			times.created[pod.UID] = now
			times.group[pod.UID] = pod.Labels["app"]
		}
		if _, seen := times.running[pod.UID]; !seen && pod.Status.Phase == corev1.PodRunning {
			times.running[pod.UID] = now
		}
		if times.live() >= want {
			break
		}
	}
	all := time.Since(start)
	prof.finish(t)
	// The API server can still be saturated by the run (5,000 pods on two
	// cores): the figures are reported even if the NodeClaims cannot be
	// listed.
	claims, err := s.nodeClaims(t.Context())
	for i := 0; err != nil && i < 5; i++ {
		time.Sleep(5 * time.Second)
		claims, err = s.nodeClaims(t.Context())
	}
	nodeClaims := fmt.Sprint(len(claims))
	if err != nil {
		t.Errorf("listing the NodeClaims after the run: %v", err)
		nodeClaims = "unknown"
	}
	var lines []string
	groups := map[string][]time.Duration{}
	var every []time.Duration
	for uid, ran := range times.running {
		if times.gone[uid] {
			continue
		}
		d := ran.Sub(times.created[uid])
		groups[times.group[uid]] = append(groups[times.group[uid]], d)
		every = append(every, d)
	}
	for _, wl := range workloads {
		lines = append(lines, fmt.Sprintf("  %-22s %s", wl.name, percentiles(groups[wl.name])))
	}
	if timedOut {
		// The pods that never ran are the ones to explain.
		var stuck []types.UID
		for uid := range times.created {
			if _, ran := times.running[uid]; !ran && !times.gone[uid] {
				stuck = append(stuck, uid)
			}
		}
		s.trace(t, times, start, claims, stuck[:min(5, len(stuck))])
		s.reportPlans(t, times, start, claims)
		s.reportCost(t, claims)
		t.Errorf("%d pods (applied in %.1fs): only %d Running after %.1fs, %s NodeClaims; pending → Running of those that ran:\n  %-22s %s\n%s",
			want, applied.Seconds(), times.live(), all.Seconds(), nodeClaims, "all", percentiles(every), strings.Join(lines, "\n"))
		return
	}
	t.Logf("%d pods (applied in %.1fs) all Running %.1fs after apply, %s NodeClaims; pending → Running per pod:\n  %-22s %s\n%s",
		want, applied.Seconds(), all.Seconds(), nodeClaims, "all", percentiles(every), strings.Join(lines, "\n"))
	s.reportCost(t, claims)
	s.reportPlannedNodeWaits(t, times, start, claims)
	firstBound := map[string]time.Duration{}
	for uid, at := range times.bound {
		node := times.last[uid].Spec.NodeName
		if prev, ok := firstBound[node]; !ok || at < prev {
			firstBound[node] = at
		}
	}
	nodes.report(t, start, firstBound)
	s.traceSlowest(t, times, start, claims, 5)
}

// batchWindow is the longest a provisioning batch stays open
// (BATCH_MAX_DURATION's default): issue 13's bound on how long a pod may
// wait once the node planned for it has initialised.
const batchWindow = 10 * time.Second

// reportPlannedNodeWaits logs, over the pods that ran, how long each
// waited after a node planned for it was ready for it: for every plan
// (a Nominated event of joiner's), from the later of the plan and its
// NodeClaim's initialisation until the pod's next step, a binding or a
// new plan. The longest such wait of each pod makes the percentiles; pods
// over one batch window are named. The NodeClaim's Initialized time is
// in whole seconds (truncated, so a wait reads up to a second long), and
// events are sent late under load.
func (s *scenario) reportPlannedNodeWaits(t *testing.T, times *podTimes, start time.Time, claims []v1.NodeClaim) {
	initialised := map[string]time.Duration{}
	for _, nc := range claims {
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized); c != nil && c.Status == metav1.ConditionTrue {
			initialised["nodeclaim/"+nc.Name] = c.LastTransitionTime.Sub(start)
		}
	}
	plans := s.reportPlans(t, times, start, claims)
	var waits, held []time.Duration
	var over, heldOver []string
	var heldUIDs []types.UID
	for uid, bound := range times.bound {
		if times.gone[uid] {
			continue
		}
		ps := plans[uid]
		slices.SortFunc(ps, func(a, b plan) int { return cmp.Compare(a.at, b.at) })
		var longest, longestHeld time.Duration
		for i, p := range ps {
			ready := p.at
			if init, ok := initialised[p.target]; ok && init > ready {
				ready = init
			} else if !ok && strings.HasPrefix(p.target, "nodeclaim/") {
				continue // deleted since, or never initialised
			}
			next := bound
			if i+1 < len(ps) {
				next = ps[i+1].at
			}
			if w := next - ready; w > longest {
				longest = w
			}
			// joiner's share: from kube-scheduler's first rejection of
			// the pod after its node was ready to the pod's next step.
			// Until that rejection the pod waits on kube-scheduler, which
			// has not tried it on the ready node yet; after it, joiner
			// must plan the pod again within a batch.
			if rejected, ok := firstRejection(times.steps[uid], ready, next); ok {
				if w := next - rejected; w > longestHeld {
					longestHeld = w
				}
			}
		}
		waits = append(waits, longest)
		held = append(held, longestHeld)
		if longest > batchWindow {
			over = append(over, fmt.Sprintf("%s %.1fs", times.names[uid], longest.Seconds()))
		}
		if longestHeld > batchWindow {
			heldOver = append(heldOver, fmt.Sprintf("%s %.1fs", times.names[uid], longestHeld.Seconds()))
			heldUIDs = append(heldUIDs, uid)
		}
	}
	t.Logf("wait after the planned node was ready, per pod: %s; over one batch window (%s): %d %v",
		percentiles(waits), batchWindow, len(over), over[:min(10, len(over))])
	t.Logf("of it, after kube-scheduler rejected the pod with its node ready (joiner's to plan again): %s; over one batch window: %d %v",
		percentiles(held), len(heldOver), heldOver[:min(10, len(heldOver))])
	// Those are joiner's to explain.
	s.trace(t, times, start, claims, heldUIDs[:min(3, len(heldUIDs))])
}

// plan is one of joiner's plans for a pod: a Nominated event, when it was
// first sent (since the run's start) and the node or NodeClaim it names.
type plan struct {
	at     time.Duration
	target string
}

// plans returns joiner's plans for the scenario's pods, by pod, in the
// order the events list them.
func (s *scenario) plans(t *testing.T, start time.Time) map[types.UID][]plan {
	var evts corev1.EventList
	if err := s.env.Client.List(t.Context(), &evts, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	plans := map[types.UID][]plan{}
	for _, e := range evts.Items {
		if e.Reason != joinerevents.Nominated {
			continue
		}
		first := e.EventTime.Time
		if first.IsZero() {
			first = e.FirstTimestamp.Time
		}
		_, target, _ := strings.Cut(e.Message, "Pod should schedule on: ")
		plans[e.InvolvedObject.UID] = append(plans[e.InvolvedObject.UID], plan{at: first.Sub(start), target: target})
	}
	return plans
}

// reportPlans reads joiner's plans and logs what became of them
// (reportReplanning, reportBindings); it returns them.
func (s *scenario) reportPlans(t *testing.T, times *podTimes, start time.Time, claims []v1.NodeClaim) map[types.UID][]plan {
	plans := s.plans(t, start)
	reportReplanning(t, plans)
	reportBindings(t, times, plans, claims)
	return plans
}

// reportReplanning logs how many pods joiner planned onto more than one
// NodeClaim (a Nominated event naming nodeclaim/X is a plan onto a
// NodeClaim without a Node yet): each such pod can cost a NodeClaim beyond
// the one it runs on, until consolidation takes it back. In a 5,000-pod
// burst, pods whose kube-scheduler took minutes to try them outlived
// their nomination's window and were planned again (docs/performance/log-2026-11-24-to-29.md).
func reportReplanning(t *testing.T, plans map[types.UID][]plan) {
	replanned := 0
	claims := map[string]bool{}
	for _, ps := range plans {
		mine := map[string]bool{}
		for _, p := range ps {
			if strings.HasPrefix(p.target, "nodeclaim/") {
				mine[p.target] = true
				claims[p.target] = true
			}
		}
		if len(mine) > 1 {
			replanned++
		}
	}
	t.Logf("plans: %d pods planned (Nominated events), %d of them onto more than one NodeClaim; %d NodeClaims planned for",
		len(plans), replanned, len(claims))
}

// reportBindings logs where kube-scheduler bound the pods, against
// joiner's plans made before each binding: onto the node of the pod's
// last plan, of an earlier one, onto another node, or with no plan at all
// (kube-scheduler's first try found room). It also counts the bindings
// that took the room of another pod: a node never planned for the bound
// pod, that another pod, not bound by then and not deleted, had as its
// latest plan. That is room status.nominatedNodeName did not keep.
//
// Plans are joiner's Nominated events, so what joiner's event recorder
// holds back skews the counts: an event beyond its rate limit
// (joiner_events_dropped_total) reads as no plan, and a plan repeated
// within two minutes (events.DefaultDedupeTimeout) is not seen again (A, B,
// A reads as A, B). A plan onto a NodeClaim counts as its node's once the
// NodeClaim has one (NodeClaims deleted since are not known). A plan is
// timed when joiner published it and a binding when the benchmark's watch
// saw it, seconds late under load, so a plan made just after a binding
// can read as made before it.
func reportBindings(t *testing.T, times *podTimes, plans map[types.UID][]plan, claims []v1.NodeClaim) {
	nodeOf := map[string]string{}
	for _, nc := range claims {
		if nc.Status.NodeName != "" {
			nodeOf["nodeclaim/"+nc.Name] = nc.Status.NodeName
		}
	}
	node := func(target string) string {
		if name, ok := strings.CutPrefix(target, "node/"); ok {
			return name
		}
		return nodeOf[target]
	}
	// plannedFor is, per node, the pods ever planned onto it.
	plannedFor := map[string]map[types.UID]bool{}
	for uid, ps := range plans {
		for _, p := range ps {
			n := node(p.target)
			if n == "" {
				continue
			}
			if plannedFor[n] == nil {
				plannedFor[n] = map[types.UID]bool{}
			}
			plannedFor[n][uid] = true
		}
	}
	var last, earlier, elsewhere, unplanned, taken int
	for uid, at := range times.bound {
		if times.gone[uid] {
			continue
		}
		on := times.last[uid].Spec.NodeName
		switch latest := latestPlan(plans[uid], at); {
		case latest == nil:
			unplanned++
		case node(latest.target) == on:
			last++
		case slices.ContainsFunc(plans[uid], func(p plan) bool { return p.at <= at && node(p.target) == on }):
			earlier++
		default:
			elsewhere++
		}
		if !plannedFor[on][uid] {
			for other := range plannedFor[on] {
				if waitingFor(times, plans, other, at, node) == on {
					taken++
					break
				}
			}
		}
	}
	t.Logf("bindings: %d onto the node of the pod's last plan, %d of an earlier plan, %d elsewhere, %d with no plan before; %d took the room of another pod still waiting for it",
		last, earlier, elsewhere, unplanned, taken)
}

// waitingFor is the node of pod's latest plan before at, if the pod was
// still waiting then (not bound, not deleted), else "".
func waitingFor(times *podTimes, plans map[types.UID][]plan, pod types.UID, at time.Duration, node func(string) string) string {
	if times.gone[pod] {
		return ""
	}
	if bound, ok := times.bound[pod]; ok && bound <= at {
		return ""
	}
	latest := latestPlan(plans[pod], at)
	if latest == nil {
		return ""
	}
	return node(latest.target)
}

// latestPlan is the last of ps made at or before at, or nil.
func latestPlan(ps []plan, at time.Duration) *plan {
	var latest *plan
	for i, p := range ps {
		if p.at <= at && (latest == nil || p.at > latest.at) {
			latest = &ps[i]
		}
	}
	return latest
}

// firstRejection is the time of the first PodScheduled=False change in
// steps within (after, before), as the benchmark's watch saw it.
func firstRejection(steps []step, after, before time.Duration) (time.Duration, bool) {
	for _, st := range steps {
		if st.at > after && st.at < before && strings.HasPrefix(st.what, "PodScheduled=False") {
			return st.at, true
		}
	}
	return 0, false
}

// traceSlowest logs the timeline of the n slowest pods: their own changes
// (watched, to the millisecond), the events joiner and kube-scheduler
// gave them, and the steps of the NodeClaim and Node they ran on (API
// timestamps, to the second), all in seconds after apply.
func (s *scenario) traceSlowest(t *testing.T, times *podTimes, start time.Time, claims []v1.NodeClaim, n int) {
	uids := make([]types.UID, 0, len(times.running))
	for uid := range times.running {
		if !times.gone[uid] {
			uids = append(uids, uid)
		}
	}
	slices.SortFunc(uids, func(a, b types.UID) int {
		return cmp.Compare(times.running[b].Sub(times.created[b]), times.running[a].Sub(times.created[a]))
	})
	s.trace(t, times, start, claims, uids[:min(n, len(uids))])
}

// trace logs the timelines of the given pods (see traceSlowest).
func (s *scenario) trace(t *testing.T, times *podTimes, start time.Time, claims []v1.NodeClaim, uids []types.UID) {
	var events corev1.EventList
	if err := s.env.Client.List(t.Context(), &events, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := s.env.Client.List(t.Context(), &nodes, client.MatchingLabels{v1.LabelNodePool: s.nodePool.Name}); err != nil {
		t.Fatal(err)
	}
	for _, uid := range uids {
		var out []step
		add := func(at time.Duration, format string, args ...any) {
			out = append(out, step{at: at, what: fmt.Sprintf(format, args...)})
		}
		since := func(at metav1.Time) time.Duration { return at.Sub(start) }
		for _, st := range times.steps[uid] {
			add(st.at, "%s", st.what)
		}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == uid {
				at := e.LastTimestamp
				if at.IsZero() {
					at = metav1.Time{Time: e.EventTime.Time}
				}
				add(since(at), "event %s (%s, x%d): %s", e.Reason, e.Source.Component+e.ReportingController, max(e.Count, 1), e.Message)
			}
		}
		node := times.last[uid].Spec.NodeName
		// The NodeClaims planned for the pod (its Nominated events) and
		// the one it ran on.
		planned := map[string]bool{}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == uid && e.Reason == joinerevents.Nominated {
				_, target, _ := strings.Cut(e.Message, "Pod should schedule on: nodeclaim/")
				planned[target] = true
			}
		}
		for _, nc := range claims {
			ranOn := node != "" && nc.Status.NodeName == node
			if !ranOn && !planned[nc.Name] {
				continue
			}
			which := "nodeclaim"
			if !ranOn {
				which = "planned nodeclaim"
			}
			add(since(nc.CreationTimestamp), "%s/%s created (node %s)", which, nc.Name, nc.Status.NodeName)
			for _, c := range nc.Status.Conditions {
				add(since(c.LastTransitionTime), "%s/%s %s=%s", which, nc.Name, c.Type, c.Status)
			}
		}
		for _, nd := range nodes.Items {
			if nd.Name != node {
				continue
			}
			add(since(nd.CreationTimestamp), "node/%s created", nd.Name)
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady {
					add(since(c.LastTransitionTime), "node Ready=%s", c.Status)
				}
			}
		}
		slices.SortStableFunc(out, func(a, b step) int { return cmp.Compare(a.at, b.at) })
		lines := make([]string, len(out))
		for i, st := range out {
			lines[i] = fmt.Sprintf("  %+6.1fs  %s", st.at.Seconds(), st.what)
		}
		outcome := "never Running"
		if ran, ok := times.running[uid]; ok {
			outcome = fmt.Sprintf("pending → Running %.1fs", ran.Sub(times.created[uid]).Seconds())
		}
		t.Logf("pod %s (%s) %s:\n%s", times.names[uid], times.group[uid], outcome, strings.Join(lines, "\n"))
	}
}

// percentiles formats n, p50, p90 and max of ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no pods"
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1)+0.5)] }
	return fmt.Sprintf("n=%-4d p50 %5.1fs  p90 %5.1fs  max %5.1fs", len(ds), at(0.5).Seconds(), at(0.9).Seconds(), ds[len(ds)-1].Seconds())
}

// reportCost logs what the run's NodeClaims cost per hour, at list prices
// and billed (scheduling.NodePrice: credits for the CPU their pods request
// above a burstable type's baseline, and volumes), from the simulated
// cloud's catalog. joiner plans with PRICE_MODEL from the environment.
func (s *scenario) reportCost(t *testing.T, claims []v1.NodeClaim) {
	its, err := sim.DefaultCatalog(s.nodeClass)
	if err != nil {
		t.Errorf("pricing the NodeClaims: %v", err)
		return
	}
	var pods corev1.PodList
	if err := s.env.Client.List(t.Context(), &pods, client.InNamespace(s.ns)); err != nil {
		t.Errorf("pricing the NodeClaims: listing pods: %v", err)
		return
	}
	onNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		}
	}
	list, billed, unpriced := 0.0, 0.0, 0
	for _, nc := range claims {
		l := nc.Labels
		price, ok := scheduling.ExistingNodePrice(its, l[v1.LabelInstanceType], l[v1.LabelTopologyZone], l[v1.LabelCapacityType], onNode[nc.Status.NodeName], false)
		if !ok {
			unpriced++
			continue
		}
		list += price.List
		billed += price.Total()
	}
	t.Logf("cost: %d NodeClaims, $%.4f/h at list prices, $%.4f/h billed (PRICE_MODEL=%q); %d unpriced", len(claims), list, billed, os.Getenv("PRICE_MODEL"), unpriced)
}
