package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestComposedCommands converges a real cluster, every consolidation
// command composing further steps (Decide composes only when that is
// cheap, which on this cluster is never), and holds each command of
// several steps to what Validate promises:
// the same input validates it (each step re-simulated in order on the
// cluster the steps before it leave), a pod of a later step's candidate
// that asks not to be disrupted invalidates it, and each evicted pod moves
// once, to a node that stays or to one of the command's replacements.
func TestComposedCommands(t *testing.T) {
	c := loadCluster(t, "diverse-1000")
	composed := 0
	for round := 0; round < 30; round++ {
		in := c.Input(benchNow, disruption.Options{})
		d, err := disruption.DecideComposingAll(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Command == nil {
			break
		}
		cmd := d.Command
		checkCommand(t, in, d)
		if disruption.Steps(cmd) > 1 {
			composed++
			if err := disruption.Validate(cmd, c.Input(benchNow, disruption.Options{})); err != nil {
				t.Errorf("round %d: a composed command of %d steps fails validation on the input it came from: %v", round, disruption.Steps(cmd), err)
			}
			fresh := c.Input(benchNow, disruption.Options{})
			last := cmd.Candidates[len(cmd.Candidates)-1]
			blocked := false
			for i := range fresh.Nodes {
				if n := &fresh.Nodes[i]; n.Name == last && len(n.Pods) > 0 {
					p := n.Pods[0].DeepCopy()
					p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
					n.Pods = append([]*corev1.Pod{p}, n.Pods[1:]...) // the cluster shares the slice
					blocked = true
				}
			}
			if !blocked {
				t.Fatalf("round %d: candidate %q has no pod", round, last)
			}
			if err := disruption.Validate(cmd, fresh); err == nil {
				t.Errorf("round %d: a composed command still validates with do-not-disrupt on its last candidate %q", round, last)
			}
			stays := map[string]bool{}
			for _, n := range c.Nodes {
				stays[n.Name] = true
			}
			for _, name := range cmd.Candidates {
				delete(stays, name)
			}
			seen := map[string]bool{}
			for _, m := range cmd.Moves {
				key := m.Pod.Namespace + "/" + m.Pod.Name
				if seen[key] {
					t.Errorf("round %d: pod %s moves twice in one command", round, key)
				}
				seen[key] = true
				if m.To != "" && !stays[m.To] {
					t.Errorf("round %d: pod %s moves to %q, which does not stay", round, key, m.To)
				}
			}
		}
		if err := c.Apply(cmd); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if composed == 0 {
		t.Fatal("no command composed several steps: the test exercises nothing")
	}
	t.Logf("%d composed commands", composed)
}

// TestComposedCommandsKubeSchedulerRealise: removing b alone (its large
// pod onto a new c4) is a command; the next pass's step, a's three small
// pods into the rest of that c4 and e's last cpu, passes kube-scheduler's
// replay on its own too. Composed, though, the command evicts all four
// pods at once, and kube-scheduler sends the small ones (the smallest
// first) to the least allocated node, the empty c4, where the large pod
// then finds no room: the whole must pass the replay, not only each step.
func TestComposedCommandsKubeSchedulerRealise(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	in := input(t, pool(),
		node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7")}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
		node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"))}},
	)
	for _, tc := range []struct {
		name   string
		decide func(*disruption.Input) (*disruption.Decision, error)
	}{{"composing every step", disruption.DecideComposingAll}, {"Decide", disruption.Decide}} {
		d, err := tc.decide(in)
		if err != nil {
			t.Fatal(err)
		}
		cmd := d.Command
		if cmd == nil {
			t.Fatalf("%s: no command: b alone fits a c4", tc.name)
		}
		if len(cmd.Candidates) > 1 {
			t.Fatalf("%s: command %s %v → %v counts on the large pod finding room on a new c4 that kube-scheduler fills with the small pods first", tc.name, cmd.Method, cmd.Candidates, replacementTypes(cmd))
		}
	}
}

// TestEmptyNodesJoinConsolidation: the empty nodes of a pass and the
// consolidation the next pass would find go as one command, counted under
// the Underutilized budget once the empty nodes are taken from it; when
// that budget cannot hold the empty nodes, or has nothing left after them,
// emptiness goes alone under its own reason. The composed command
// validates on the input it came from, and no longer once one of its
// "empty" nodes runs a pod that asks not to be disrupted.
func TestEmptyNodesJoinConsolidation(t *testing.T) {
	two := []v1.Budget{{Nodes: "100%", Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}}, {Nodes: "1", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized}}}
	for _, tc := range []struct {
		name    string
		budgets []v1.Budget
		want    disruption.Reason
		cands   int
	}{
		{name: "default budget", want: disruption.ReasonUnderutilized, cands: 3},
		{name: "two nodes in all", budgets: []v1.Budget{{Nodes: "2"}}, want: disruption.ReasonEmpty, cands: 2},
		{name: "fewer underutilized than empty nodes", budgets: two, want: disruption.ReasonEmpty, cands: 2},
		{name: "no underutilized", budgets: []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized}}}, want: disruption.ReasonEmpty, cands: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := func() []node {
				return []node{{name: "a", it: "c4"}, {name: "b", it: "c8"}, {name: "c", it: "c4", pods: []*corev1.Pod{pod("p", "1")}}, {name: "d", it: "c8", pods: []*corev1.Pod{pod("q", "7")}}}
			}
			np := pool()
			if tc.budgets != nil {
				np.Spec.Disruption.Budgets = tc.budgets
			}
			in := input(t, np, nodes()...)
			d, err := disruption.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Command == nil {
				t.Fatal("no command")
			}
			checkCommand(t, in, d)
			cmd := d.Command
			if cmd.Reason != tc.want || len(cmd.Candidates) != tc.cands {
				t.Fatalf("%s command (%s) of %v, want %d candidates under %s", cmd.Method, cmd.Reason, cmd.Candidates, tc.cands, tc.want)
			}
			if tc.want == disruption.ReasonEmpty {
				if cmd.Method != disruption.MethodEmptiness {
					t.Fatalf("%s, want emptiness alone", cmd.Method)
				}
				return
			}
			if cmd.Method != disruption.MethodMultiNode || disruption.Steps(cmd) != 2 {
				t.Fatalf("%s of %d steps, want one multi-node command of 2", cmd.Method, disruption.Steps(cmd))
			}
			if err := disruption.Validate(cmd, input(t, np, nodes()...)); err != nil {
				t.Fatalf("the command fails validation on its own input: %v", err)
			}
			blocked := nodes()
			blocked[0].pods = []*corev1.Pod{pod("late", "100m", annotated(v1.AnnotationDoNotDisrupt, "true"))}
			if err := disruption.Validate(cmd, input(t, np, blocked...)); err == nil {
				t.Fatal("the command still validates with a do-not-disrupt pod on its empty node a")
			}
		})
	}
}

// TestComposedDescent descends diverse-5000 with Decide and checks, on
// every command, two things about composed steps:
//
//   - A command its pass found only after peeling (several simulations)
//     composes further steps, each no larger than the first, found with
//     one simulation each, and validates on the input it came from.
//     Before, such a command went alone and each of the small commands of
//     a descent's tail was a command of its own.
//   - A composed step's replacement whose offerings leave its zone open is
//     launched pinned to the zone it is cheapest in, so a later step may
//     send a zone-spread pod there (kube-scheduler's spread filter turns a
//     pod away from a node without the zone label, and so does the
//     solver; before, no such pod landed on an earlier step's replacement,
//     and this descent took two more commands). Every replacement that
//     takes a zone-spread pod launches in one zone (the NodeClaim built
//     from it requires that zone alone, as the plan counted it), some
//     later step's zone-spread pod does land on an earlier step's
//     replacement, and those commands validate on their own input.
func TestComposedDescent(t *testing.T) {
	c := loadCluster(t, "diverse-5000")
	solves := 0
	opts := disruption.Options{Solve: func(s *scheduling.Snapshot, o scheduling.Options) (*scheduling.Plan, error) {
		solves++
		return scheduling.Solve(s, o)
	}}
	peeled, across := 0, 0
	for round := 0; round < 40; round++ {
		in := c.Input(benchNow, opts)
		before := solves
		d, err := disruption.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Command == nil {
			break
		}
		cmd := d.Command
		checkCommand(t, in, d)
		sizes := disruption.StepSizes(cmd)
		validate := false
		// A pass that peeled ran at least two simulations before its
		// command, and each composed step one more.
		if len(sizes) > 1 && solves-before > len(sizes) {
			peeled++
			validate = true
			for i, n := range sizes[1:] {
				if n > sizes[0] {
					t.Errorf("round %d: step %d takes %d nodes, more than the peeled first step's %d", round, i+2, n, sizes[0])
				}
			}
		}
		if crossesZoneSpread(t, round, in, cmd) {
			across++
			validate = true
		}
		if validate {
			if err := disruption.Validate(cmd, c.Input(benchNow, disruption.Options{})); err != nil {
				t.Errorf("round %d: composed command %v fails validation on its own input: %v", round, sizes, err)
			}
		}
		if err := c.Apply(cmd); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if peeled == 0 {
		t.Error("no peeled command composed further steps")
	}
	if across == 0 {
		t.Error("no later step's zone-spread pod landed on an earlier step's replacement")
	}
	t.Logf("%d peeled commands composed further steps; %d send a later step's zone-spread pod to an earlier step's replacement", peeled, across)
}

// crossesZoneSpread reports whether cmd sends a zone-spread pod of one
// step to a replacement an earlier step launches, and fails the test when
// a replacement that takes a zone-spread pod may launch in several zones.
func crossesZoneSpread(t *testing.T, round int, in *disruption.Input, cmd *disruption.Command) bool {
	t.Helper()
	stepOf := map[string]int{} // candidate → its step
	i := 0
	for s, n := range disruption.StepSizes(cmd) {
		for ; n > 0; n-- {
			stepOf[cmd.Candidates[i]] = s
			i++
		}
	}
	var launchedBy []int // replacement → the step that launches it
	for s, n := range disruption.StepReplacements(cmd) {
		for ; n > 0; n-- {
			launchedBy = append(launchedBy, s)
		}
	}
	crossed := false
	for _, m := range cmd.Moves {
		if m.To != "" || !slices.ContainsFunc(m.Pod.Spec.TopologySpreadConstraints, func(tsc corev1.TopologySpreadConstraint) bool {
			return tsc.TopologyKey == corev1.LabelTopologyZone && tsc.WhenUnsatisfiable == corev1.DoNotSchedule
		}) {
			continue
		}
		repl := cmd.Replacements[m.Replacement]
		nc := nodeclaims.NewNodeClaim(in.NodePools[repl.NodePool], repl)
		var zones []string
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
				zones = r.Values
			}
		}
		if len(zones) != 1 {
			t.Errorf("round %d: zone-spread pod %s moves to replacement %d, whose NodeClaim may launch in zones %v", round, m.Pod.Name, m.Replacement, zones)
		}
		if launchedBy[m.Replacement] < stepOf[m.From] {
			crossed = true
		}
	}
	return crossed
}

// TestComposedLastStepLaunchesOpen: when the last step of a composed
// command goes (the command as a whole fails kube-scheduler's replay;
// here every command of more than two steps is made to), the step before
// it becomes the last. Nothing after it counts any more on the zones its
// replacements were pinned to for the later steps, so each launches as it
// was found, as the last step of every composed command does: the zones
// of every replacement of the new last step are those it was found with.
// Before, they stayed pinned to one zone each: a NodeClaim narrowed for
// no step's sake, and replayed by Validate otherwise than it launches.
func TestComposedLastStepLaunchesOpen(t *testing.T) {
	c := loadCluster(t, "diverse-5000")
	dropped, open := 0, 0
	for round := 0; round < 40; round++ {
		in := c.Input(benchNow, disruption.Options{})
		d, went, found, err := disruption.DecideComposingAtMost(in, 2)
		if err != nil {
			t.Fatal(err)
		}
		if d.Command == nil {
			break
		}
		cmd := d.Command
		checkCommand(t, in, d)
		if went && disruption.Steps(cmd) == 2 {
			dropped++
			launched, asFound := disruption.StepZones(cmd)[1], found[1]
			if len(launched) != len(asFound) {
				t.Fatalf("round %d: the last step launches %d replacements, it was found with %d", round, len(launched), len(asFound))
			}
			for i := range launched {
				if !slices.Equal(launched[i], asFound[i]) {
					t.Errorf("round %d: the last step's replacement %d launches in zones %v, it was found open to %v", round, i, launched[i], asFound[i])
				}
			}
			if slices.ContainsFunc(asFound, func(z []string) bool { return len(z) > 1 }) {
				open++
			}
			if err := disruption.Validate(cmd, c.Input(benchNow, disruption.Options{})); err != nil {
				t.Errorf("round %d: a command whose last step went fails validation on its own input: %v", round, err)
			}
		}
		if err := c.Apply(cmd); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if dropped == 0 {
		t.Fatal("no composed command lost its last step: the test exercises nothing")
	}
	if open == 0 {
		t.Errorf("in none of %d commands whose third step went was a replacement of the new last step found open to several zones: the test exercises no pin", dropped)
	}
	t.Logf("%d commands lost their last steps; in %d the new last step was found open to several zones", dropped, open)
}
