package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// wideDeployment is one Deployment of upstream Karpenter's performance
// spec "Wide Deployments" (test/suites/performance): its requests, and
// whether it adds hostname anti-affinity or hostname spread to the zone
// spread every Deployment has.
type wideDeployment struct {
	cpu, memory    string
	antiAffinity   bool
	hostnameSpread bool
}

// wideDeployments are ten of upstream's thirty Deployments, two of each
// kind it has (anti-affinity, hostname spread) and six plain ones of
// small to large requests.
var wideDeployments = []wideDeployment{
	{"240m", "300Mi", true, false},
	{"450m", "400Mi", true, false},
	{"900m", "1Gi", false, true},
	{"1400m", "2Gi", false, true},
	{"2800m", "4Gi", false, false},
	{"2300m", "64Gi", false, false},
	{"2800m", "32Gi", false, false},
	{"3300m", "30Gi", false, false},
	{"450m", "750Mi", false, false},
	{"2800m", "32Gi", false, false},
}

// TestWideDeploymentsSettle is upstream's "Wide Deployments" consolidation
// phase at a small scale, judged by kube-scheduler: Deployments of many
// replicas, every one spread over zones (maxSkew 1, DoNotSchedule), scale
// in by 30%, and consolidation must then settle: each pod moved at most
// once on average, no pod left without room (provisioning launches no
// node), and the node count not rising by more than a third. Upstream's run
// against joiner moved every pod about 19 times in 54 commands while the
// node count swung between 115 and 215.
//
// JOINER_WIDE_REPLICAS (upstream 35; `make wide-deployments` sets 20)
// sets the replicas per Deployment before the scale-in and runs the test;
// JOINER_WIDE_WATCH (default 90s) is how long consolidation may take to
// settle. It is a measurement, not in the default run: at 10 replicas
// the old code (before the replay) passed it on some runs and the new
// code failed it on some, on a loaded machine. What the replay must get
// right is judged deterministically, with the real kube-scheduler, by
// pkg/controllers/disruption/realise.
func TestWideDeploymentsSettle(t *testing.T) {
	if os.Getenv("JOINER_WIDE_REPLICAS") == "" {
		t.Skip("a measurement of a few minutes: make wide-deployments (JOINER_WIDE_REPLICAS=20)")
	}
	replicas := envInt(t, "JOINER_WIDE_REPLICAS", 10)
	watch := envDuration(t, "JOINER_WIDE_WATCH", 90*time.Second)
	scaleIn := int32(replicas * 7 / 10)
	startJoiner(t)

	s := newScenario(t)
	// Upstream's run: the kwok provider's node class (its catalog, four
	// zones, prices linear in cpu and memory).
	kc := &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "kwok")},
		Spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: metav1.Duration{Duration: time.Second}},
	}
	s.env.Create(t, kc)
	s.pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KindKWOKNodeClass, Name: kc.Name}
	s.pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: kwokv1alpha1.LabelInstanceSize, Operator: corev1.NodeSelectorOpLt, Values: []string{"32"}},
	}
	s.pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("5s")
	s.apply()

	var deps []*appsv1.Deployment
	for i, w := range wideDeployments {
		name := fmt.Sprintf("wide-%d", i+1)
		deps = append(deps, s.deployment(name, int32(replicas), w.cpu, func(p *corev1.PodTemplateSpec) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(w.memory)
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
			}}
			if w.hostnameSpread {
				p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
					MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
				})
			}
			if w.antiAffinity {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: sel}},
				}}
			}
		}))
	}
	total := replicas * len(deps)
	test.Eventually(t, max(3*time.Minute, time.Duration(total)*time.Second), func(ctx context.Context) error {
		n, err := s.runningCount(ctx)
		if err != nil {
			return err
		}
		if n != total {
			return fmt.Errorf("%d of %d pods running", n, total)
		}
		return nil
	})
	// quiet is how long nothing may change for consolidation to count as
	// settled: a few passes (consolidateAfter 5 s, validation 2 s) on a
	// loaded machine.
	const quiet = 30 * time.Second
	// Scale-out's own consolidation (a node launched for a burst that a
	// later, larger node made redundant) is not the subject: let it end.
	w := newChurnWatch(s)
	w.settle(t, quiet, 2*time.Minute)
	t.Logf("%s scale-out: %d pods on %d nodes", time.Now().UTC().Format(time.TimeOnly), total, w.nodes)

	for _, d := range deps {
		s.scale(d, scaleIn)
	}
	left := int(scaleIn) * len(deps)
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		n, err := s.runningCount(ctx)
		if err != nil {
			return err
		}
		if n != left {
			return fmt.Errorf("%d pods running, want %d", n, left)
		}
		return nil
	})
	w = newChurnWatch(s)
	settled := w.settle(t, quiet, watch)
	t.Logf("%s consolidation of %d pods: %d commands moved %d pods in %s; nodes %d at the scale-in, then %d–%d, %d at the end; %d nodeclaims created, %d of them by provisioning for pods that found no room",
		time.Now().UTC().Format(time.TimeOnly), left, w.commands(), w.moved, w.elapsed().Round(time.Second), w.startNodes, w.minNodes, w.maxNodes, w.nodes, w.created, w.provisioned())
	w.schedulingFailures()
	if !settled {
		t.Errorf("consolidation did not settle within %s (no pod moved and no node changed for %s)", watch, quiet)
	}
	// Each pod moved at most once is what one pass of consolidation
	// needs; commands that re-pack the pods the last one just placed move
	// them again and again.
	if w.moved > left {
		t.Errorf("consolidation moved %d pods, more than the %d pods left", w.moved, left)
	}
	// A command's evicted pods must find the room it counted on: a pod
	// that goes pending gets a node of its own, which the next pass
	// consolidates again. A few are let through (an eighth of the nodes):
	// the replay of a command (pkg/disruption/realise.go) models
	// kube-scheduler's resource score, not its zone and hostname spread,
	// which still pushed one or two pods into no room at 10 and 35
	// replicas; before the replay, every command of the 20-replica run
	// left pods pending (37 nodes grew to 72).
	if n := w.provisioned(); n > max(w.startNodes/8, 1) {
		t.Errorf("provisioning launched %d nodes for pods consolidation evicted", n)
	}
	// Replacements launch before the candidates go, so the count can pass
	// its start by the replacements of the commands in flight; nodes for
	// pods that found no room push it further.
	if w.maxNodes > w.startNodes+w.startNodes/3 {
		t.Errorf("the node count rose from %d to %d while consolidating", w.startNodes, w.maxNodes)
	}
}

// runningCount is the number of the scenario's pods running and not
// being deleted.
func (s *scenario) runningCount(ctx context.Context) (int, error) {
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(s.ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n, nil
}

// churnWatch measures what disruption does to a scenario from its start:
// pods created (each an evicted pod's replacement, as the Deployments'
// sizes do not change), commands carried out and the node count.
type churnWatch struct {
	s          *scenario
	start      time.Time
	last       time.Time // the last change seen
	pods       map[types.UID]bool
	claims     map[types.UID]bool
	decisions0 float64
	// provisioned0 is the NodeClaims provisioning created for the pool.
	provisioned0 float64

	moved, created                        int
	nodes, startNodes, minNodes, maxNodes int
}

func newChurnWatch(s *scenario) *churnWatch {
	w := &churnWatch{s: s, start: time.Now(), pods: map[types.UID]bool{}, claims: map[types.UID]bool{}, decisions0: decisionsTotalNow(s.t), provisioned0: provisionedNow(s)}
	w.last = w.start
	if err := w.observe(s.t.Context(), true); err != nil {
		s.t.Fatal(err)
	}
	return w
}

// observe records the pods and live NodeClaims now.
func (w *churnWatch) observe(ctx context.Context, first bool) error {
	var pods corev1.PodList
	if err := w.s.env.Client.List(ctx, &pods, client.InNamespace(w.s.ns)); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if !w.pods[p.UID] {
			w.pods[p.UID] = true
			if !first {
				w.moved++
				w.last = time.Now()
			}
		}
	}
	live, err := w.s.liveClaims(ctx)
	if err != nil {
		return err
	}
	for _, nc := range live {
		if !w.claims[nc.UID] {
			w.claims[nc.UID] = true
			if !first {
				w.created++
			}
		}
	}
	if len(live) != w.nodes && !first {
		w.last = time.Now()
	}
	w.nodes = len(live)
	if first {
		w.startNodes, w.minNodes, w.maxNodes = w.nodes, w.nodes, w.nodes
	}
	w.minNodes, w.maxNodes = min(w.minNodes, w.nodes), max(w.maxNodes, w.nodes)
	return nil
}

// settle observes every half second until nothing changed for quiet, or
// timeout passed; it reports whether the cluster settled.
func (w *churnWatch) settle(t *testing.T, quiet, timeout time.Duration) bool {
	t.Helper()
	deadline := w.start.Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-t.Context().Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
		if err := w.observe(t.Context(), false); err != nil {
			t.Logf("observing: %v", err)
			continue
		}
		if time.Since(w.last) >= quiet {
			return true
		}
	}
	return false
}

func (w *churnWatch) elapsed() time.Duration { return w.last.Sub(w.start) }

// commands is the number of disruption commands carried out since the
// watch began (the process-wide counter: run no other scenario beside).
func (w *churnWatch) commands() int { return int(decisionsTotalNow(w.s.t) - w.decisions0) }

// provisioned is the number of NodeClaims provisioning (not a
// disruption command) created for the pool since the watch began: nodes
// for pods that found no room.
func (w *churnWatch) provisioned() int { return int(provisionedNow(w.s) - w.provisioned0) }

// provisionedNow reads karpenter_nodeclaims_created_total of the pool for
// reason provisioning.
func provisionedNow(s *scenario) float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		s.t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "karpenter_nodeclaims_created_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["nodepool"] == s.pool.Name && labels["reason"] == "provisioning" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// decisionsTotalNow sums karpenter_voluntary_disruption_decisions_total.
func decisionsTotalNow(t *testing.T) float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if strings.HasSuffix(f.GetName(), "voluntary_disruption_decisions_total") {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 10m", name, v)
	}
	return d
}

// schedulingFailures logs kube-scheduler's FailedScheduling events about
// the scenario's pods since the watch began, by message: each is a pod
// that did not land where consolidation's simulation put it.
func (w *churnWatch) schedulingFailures() {
	var list eventsv1.EventList
	if err := w.s.env.Client.List(w.s.t.Context(), &list, client.InNamespace(w.s.ns)); err != nil {
		w.s.t.Logf("listing events: %v", err)
		return
	}
	count := map[string]int{}
	for _, e := range list.Items {
		if e.Reason == "FailedScheduling" && !e.CreationTimestamp.Time.Before(w.start.Add(-time.Second)) {
			count[e.Note]++
		}
	}
	for note, n := range count {
		w.s.t.Logf("FailedScheduling ×%d: %s", n, note)
	}
}
