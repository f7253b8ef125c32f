package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	disruptionctrl "github.com/joiner-dev/joiner/pkg/controllers/disruption"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestDisruption runs one joiner for every scenario; the scenarios run in
// parallel, each on its own NodePool.
func TestDisruption(t *testing.T) {
	startJoiner(t)
	for _, sc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"scale-down 40 to 4 to 0 gives nodes back", scaleDown},
		{"an underutilised node is replaced by a cheaper type", cheaperReplacement},
		{"a PodDisruptionBudget blocks", blockedBy(pdbBlocks, "pdb prevents pod evictions")},
		{"do-not-disrupt on a pod blocks", blockedBy(podDoNotDisrupt, `"karpenter.sh/do-not-disrupt" annotation (Pod=`)},
		{"do-not-disrupt on a node blocks", blockedBy(nodeDoNotDisrupt, `disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`)},
		{"a budget of zero blocks", budgetZero},
		{"a cron budget window blocks while active", cronWindow},
		{"a drifted node is replaced", driftReplaces},
		{"drift stops when its replacements never initialise", safeDrift},
		{"an ownerless pod is warned about, then evicted and named", ownerlessPod},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t)
		})
	}
}

// cpuOf is the pool's total cpu capacity over its live NodeClaims.
func cpuOf(claims []v1.NodeClaim) int64 {
	var total int64
	for _, nc := range claims {
		q := nc.Status.Capacity[corev1.ResourceCPU]
		total += q.Value()
	}
	return total
}

// scaleDown: 40 one-cpu pods on nodes of at most 16 cpus; down to 4 pods
// consolidation leaves at most 8 cpus; down to 0, emptiness removes every
// node. Each deletion says why (DisruptionReason, DisruptionTerminating).
func scaleDown(t *testing.T) {
	s := newScenario(t)
	s.pool.Spec.Template.Spec.Requirements = append(s.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelAWSInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"17"}})
	s.apply()
	d := s.deployment("inflate", 40, "1", nil)
	s.running("inflate", 40, 3*time.Minute)
	before, err := s.liveClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("40 pods run on %d nodes, %d cpus", len(before), cpuOf(before))
	if len(before) < 3 {
		t.Fatalf("40 one-cpu pods on %d nodes of at most 16 cpus", len(before))
	}

	s.scale(d, 4)
	test.Eventually(t, 3*time.Minute, func(ctx context.Context) error {
		all, err := s.claims(ctx)
		if err != nil {
			return err
		}
		live, _ := s.liveClaims(ctx)
		if len(all) != len(live) || cpuOf(live) > 8 {
			return fmt.Errorf("%d nodeclaims (%d live, %d cpus), want at most 8 cpus and none deleting", len(all), len(live), cpuOf(live))
		}
		return nil
	})
	s.running("inflate", 4, time.Minute)
	s.waitEvent(events.DisruptionTerminating, "", "Disrupting Node: ", time.Minute)

	s.scale(d, 0)
	s.nodeCount(0, 2*time.Minute)
	s.waitEvent(events.DisruptionTerminating, "", "Disrupting Node: Empty/Delete", time.Minute)
}

// cheaperReplacement: one pod asking for 6 cpus takes one node; once the
// Deployment asks for 1 cpu instead, the node is replaced by a cheaper,
// smaller type, launched and initialised before the old node goes.
func cheaperReplacement(t *testing.T) {
	s := newScenario(t)
	s.apply()
	d := s.deployment("replace", 1, "6", nil)
	s.running("replace", 1, 2*time.Minute)
	before := s.nodeCount(1, time.Minute)
	old := before[0]
	t.Logf("a 6-cpu pod runs on %s (%d cpus)", old.Labels[v1.LabelInstanceType], cpuOf(before))
	// The node turns Consolidatable once it has been quiet for
	// consolidateAfter since its initialisation or the pod's binding,
	// whichever came later (a binding before initialisation is not
	// recorded).
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		nc := &v1.NodeClaim{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: old.Name}, nc); err != nil {
			return err
		}
		init := nc.StatusConditions().Get(v1.ConditionTypeInitialized)
		c := nc.StatusConditions().Get(v1.ConditionTypeConsolidatable)
		if init == nil || init.Status != metav1.ConditionTrue || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Initialized %v, Consolidatable %v", init, c)
		}
		quietSince := init.LastTransitionTime.Time
		if last := nc.Status.LastPodEventTime.Time; last.After(quietSince) {
			quietSince = last
		}
		if c.LastTransitionTime.Time.Before(quietSince.Add(2 * time.Second).Truncate(time.Second)) {
			return fmt.Errorf("Consolidatable since %v, less than consolidateAfter after %v (initialised or the last pod event)", c.LastTransitionTime, quietSince)
		}
		return nil
	})

	s.resize(d, "1")
	var after []v1.NodeClaim
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		all, err := s.claims(ctx)
		if err != nil {
			return err
		}
		if len(all) != 1 || all[0].Name == old.Name || all[0].DeletionTimestamp != nil {
			return fmt.Errorf("%d nodeclaims, want only a replacement of %s", len(all), old.Name)
		}
		after = all
		return nil
	})
	s.running("replace", 1, time.Minute)
	if cpuOf(after) >= cpuOf(before) {
		t.Errorf("replacement %s has %d cpus, not fewer than %s's %d", after[0].Labels[v1.LabelInstanceType], cpuOf(after), old.Labels[v1.LabelInstanceType], cpuOf(before))
	}
	s.waitEvent(events.DisruptionLaunching, after[0].Name, "Launching NodeClaim: Underutilized/Replace", time.Minute)
	s.waitEvent(events.DisruptionTerminating, old.Name, "Disrupting Node: Underutilized/Replace", time.Minute)
	t.Logf("replaced by %s (%d cpus)", after[0].Labels[v1.LabelInstanceType], cpuOf(after))
}

// blockedBy runs a scenario whose one node would be replaced by a cheaper
// one (its 6-cpu pod becomes a 1-cpu pod) but for what protect sets up;
// the node must stay, with a DisruptionBlocked event saying why.
func blockedBy(protect func(s *scenario, pod *corev1.PodTemplateSpec), why string) func(t *testing.T) {
	return func(t *testing.T) {
		s := newScenario(t)
		s.apply()
		d := s.deployment("protected", 1, "6", func(p *corev1.PodTemplateSpec) { protect(s, p) })
		s.running("protected", 1, 2*time.Minute)
		claims := s.nodeCount(1, time.Minute)
		if s.afterProvisioning != nil {
			s.afterProvisioning(claims[0])
		}
		s.resize(d, "1")
		s.waitEvent(events.DisruptionBlocked, claims[0].Status.NodeName, why, time.Minute)
		s.waitVerdict(claims[0].Name, disruption.StateBlocked, why, 30*time.Second)
		stays(t, s, claims[0].Name, 8*time.Second)
	}
}

// stays checks that the NodeClaim remains, not deleting and untainted.
func stays(t *testing.T, s *scenario, name string, d time.Duration) {
	t.Helper()
	test.Consistently(t, d, func(ctx context.Context) error {
		nc := &v1.NodeClaim{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return err
		}
		if nc.DeletionTimestamp != nil {
			return fmt.Errorf("nodeclaim %s is being deleted", name)
		}
		return nil
	})
}

func pdbBlocks(s *scenario, p *corev1.PodTemplateSpec) {
	s.env.Create(s.t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "protected", Namespace: s.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "protected"}},
		},
	})
}

func podDoNotDisrupt(_ *scenario, p *corev1.PodTemplateSpec) {
	p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
}

func nodeDoNotDisrupt(s *scenario, _ *corev1.PodTemplateSpec) {
	s.afterProvisioning = func(nc v1.NodeClaim) {
		n := &corev1.Node{}
		if err := s.env.Client.Get(s.t.Context(), client.ObjectKey{Name: nc.Status.NodeName}, n); err != nil {
			s.t.Fatal(err)
		}
		patch := client.MergeFrom(n.DeepCopy())
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1.AnnotationDoNotDisrupt] = "true"
		if err := s.env.Client.Patch(s.t.Context(), n, patch); err != nil {
			s.t.Fatal(err)
		}
	}
}

// budgetZero: an emptied node stays while the NodePool's budget allows no
// disruption; the NodePool says so.
func budgetZero(t *testing.T) {
	s := newScenario(t)
	s.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
	s.apply()
	d := s.deployment("budget", 2, "1", nil)
	s.running("budget", 2, 2*time.Minute)
	claims, err := s.liveClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.scale(d, 0)
	s.waitEvent(events.DisruptionBlocked, s.pool.Name, "No allowed disruptions for disruption reason Empty due to blocking budget", time.Minute)
	for _, nc := range claims {
		stays(t, s, nc.Name, 3*time.Second)
	}
}

// cronWindow: a budget of zero whose cron window is active keeps an empty
// node; moving the window away lets emptiness remove it.
func cronWindow(t *testing.T) {
	s := newScenario(t)
	now := time.Now().UTC()
	started := now.Add(-time.Minute)
	s.pool.Spec.Disruption.Budgets = []v1.Budget{{
		Nodes:    "0",
		Schedule: ptr.To(fmt.Sprintf("%d %d * * *", started.Minute(), started.Hour())),
		Duration: &metav1.Duration{Duration: 30 * time.Minute},
	}}
	s.apply()
	d := s.deployment("cron", 2, "1", nil)
	s.running("cron", 2, 2*time.Minute)
	claims, err := s.liveClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.scale(d, 0)
	s.waitEvent(events.DisruptionBlocked, s.pool.Name, "due to blocking budget", time.Minute)
	for _, nc := range claims {
		stays(t, s, nc.Name, 3*time.Second)
	}

	// Move the window to start in two hours: no budget is active now. A
	// merge patch, not an Update: joiner's controllers write the NodePool's
	// status meanwhile, and an Update of a stale copy would conflict.
	later := now.Add(2 * time.Hour)
	s.editPool(func(np *v1.NodePool) {
		np.Spec.Disruption.Budgets[0].Schedule = ptr.To(fmt.Sprintf("%d %d * * *", later.Minute(), later.Hour()))
	})
	s.nodeCount(0, 2*time.Minute)
}

// driftReplaces: a NodePool template change drifts its node, which is
// replaced (no validation wait for drift) and deleted once the replacement
// initialised.
func driftReplaces(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.deployment("drift", 1, "1", nil)
	s.running("drift", 1, 2*time.Minute)
	old := s.nodeCount(1, time.Minute)[0]

	s.editPool(func(np *v1.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"example.com/team": "blue"}
	})
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		all, err := s.claims(ctx)
		if err != nil {
			return err
		}
		if len(all) != 1 || all[0].Name == old.Name || all[0].Labels["example.com/team"] != "blue" {
			return fmt.Errorf("%d nodeclaims, want only a replacement of %s with the new label", len(all), old.Name)
		}
		return nil
	})
	s.running("drift", 1, time.Minute)
	s.waitEvent(events.DisruptionTerminating, old.Name, "Disrupting Node: Drifted/Replace", time.Minute)
}

// safeDrift: the template change adds a startup taint nobody removes, so
// the replacement never initialises and is deleted by the initialisation
// timeout; joiner rolls back (the drifted node keeps running, untainted),
// marks the NodePool DriftHalted and launches no further replacement.
func safeDrift(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.deployment("safe", 1, "1", nil)
	s.running("safe", 1, 2*time.Minute)
	old := s.nodeCount(1, time.Minute)[0]

	s.editPool(func(np *v1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	})
	var halted *metav1.Condition
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		np := &v1.NodePool{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(s.pool), np); err != nil {
			return err
		}
		halted = np.StatusConditions().Get(disruptionctrl.ConditionTypeDriftHalted)
		if halted == nil || halted.Status != metav1.ConditionTrue {
			return fmt.Errorf("nodepool %s DriftHalted = %v", np.Name, halted)
		}
		return nil
	})
	t.Logf("DriftHalted: %s", halted.Message)
	s.waitEvent(events.DriftHalted, s.pool.Name, "drift stopped", time.Minute)
	// The drifted node keeps running, untainted, and nothing new launches.
	test.Consistently(t, 8*time.Second, func(ctx context.Context) error {
		all, err := s.claims(ctx)
		if err != nil {
			return err
		}
		for _, nc := range all {
			if nc.Name != old.Name && nc.DeletionTimestamp == nil {
				return fmt.Errorf("nodeclaim %s launched while drift is halted", nc.Name)
			}
		}
		n := &corev1.Node{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Name: old.Status.NodeName}, n); err != nil {
			return err
		}
		if n.DeletionTimestamp != nil {
			return fmt.Errorf("drifted node %s is being deleted", n.Name)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == v1.TaintKeyDisrupted {
				return fmt.Errorf("drifted node %s is still tainted %s", n.Name, v1.TaintKeyDisrupted)
			}
		}
		return nil
	})
	s.running("safe", 1, time.Minute)
}
