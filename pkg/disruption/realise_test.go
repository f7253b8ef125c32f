package disruption_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func ownedBy(uid string) func(*corev1.Pod) {
	yes := true
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &yes}}
	}
}

// TestCommandsKubeSchedulerRealises: a command pins no pod. Removing a
// and b at once, the solver fills one new c4 with b's large pod and one
// small pod of a and sends a's other small pods into the last cpu of
// node e; kube-scheduler sends
// each evicted pod to the least allocated node, so the small ones (their
// ReplicaSet recreates them first) fill the empty c4 and the large pod
// then fits nowhere: it goes pending, the provisioner launches a node for
// it, and the next pass re-packs again (upstream's "Wide Deployments"
// churn). Consolidation must offer only what kube-scheduler realises.
func TestCommandsKubeSchedulerRealises(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	in := input(t, pool(),
		node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7")}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
		node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"))}},
	)
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Command
	if cmd == nil {
		t.Fatal("no command: b alone fits a c4, and a's pods fit the others' room")
	}
	if len(cmd.Candidates) > 1 {
		t.Fatalf("command %s %v → %v counts on the large pod finding room on a new c4 that kube-scheduler fills with the small pods first", cmd.Method, cmd.Candidates, replacementTypes(cmd))
	}
	t.Logf("command: %s %v → %v, saving $%.2f/h", cmd.Method, cmd.Candidates, replacementTypes(cmd), cmd.SavingsPerHour)
}

// TestReplayScoresAsTheProfile: the same cluster as
// TestCommandsKubeSchedulerRealises, but the pods' kube-scheduler profile
// scores NodeResourcesFit MostAllocated (SCHEDULER_CONFIG). That profile
// sends the small pods to the fullest node with room, e, before the new
// c4, so the large pod still finds its room there: the command that
// removes a and b is realised, and consolidation must not refuse it as if
// kube-scheduler spread them.
func TestReplayScoresAsTheProfile(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	in := input(t, pool(),
		node{name: "e", it: "c8", pods: []*corev1.Pod{pod("big-resident", "7")}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{small("s1"), small("s2"), small("s3")}},
		node{name: "b", it: "c8", pods: []*corev1.Pod{pod("large", "3", ownedBy("large"))}},
	)
	scoring, err := schedulerconfig.ParseScoring([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	if err != nil {
		t.Fatal(err)
	}
	in.Options.Scoring = scoring
	d, err := disruption.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := d.Command
	if cmd == nil || len(cmd.Candidates) != 2 {
		got := "none"
		if cmd != nil {
			got = fmt.Sprintf("%s %v → %v", cmd.Method, cmd.Candidates, replacementTypes(cmd))
		}
		t.Fatalf("command %s, want a and b replaced by one c4: under MostAllocated the small pods fill e first and the large one finds the c4", got)
	}
	placed, why := disruption.Realise(in, cmd)
	if !why.IsZero() {
		t.Fatalf("the replay strands a pod: %v", why)
	}
	// Smallest first: two small pods fill e's last cpu (the fullest node
	// with room), the third and the large one go to the c4.
	want := map[string]string{"s1": "e", "s2": "e", "s3": "replacement 0", "large": "replacement 0"}
	if got := landings(placed); !maps.Equal(got, want) {
		t.Errorf("placements %v, want %v", got, want)
	}
}

// landings names where each placed pod landed: a node's name,
// "replacement i", or "nowhere".
func landings(placed []disruption.Placement) map[string]string {
	out := map[string]string{}
	for _, p := range placed {
		switch {
		case p.Node != "":
			out[p.Pod.Name] = p.Node
		case p.Replacement >= 0:
			out[p.Pod.Name] = fmt.Sprintf("replacement %d", p.Replacement)
		default:
			out[p.Pod.Name] = "nowhere"
		}
	}
	return out
}

// replacement is a new c4 of the default pool carrying ps (the DaemonSets
// add nothing: the tests' DaemonSets request nothing).
func replacement(ps ...*corev1.Pod) *scheduling.NewNodeClaim {
	c4 := catalog()[2]
	return &scheduling.NewNodeClaim{NodePool: "default", InstanceTypes: []*scheduling.InstanceType{c4}, Pods: ps, Requests: pods.SumRequests(ps)}
}

// command is a consolidation command removing candidates, with the moves
// given: each pod to an existing node's name or to "replacement i".
func command(candidates []string, replacements []*scheduling.NewNodeClaim, moves map[*corev1.Pod]string, from map[*corev1.Pod]string) *disruption.Command {
	cmd := &disruption.Command{Method: disruption.MethodMultiNode, Candidates: candidates, Replacements: replacements}
	// By pod name, not the map's order: the replay lists tied nodes in the
	// order of the moves, and a test that follows the first tied node
	// must follow the same one every run.
	byName := slices.SortedFunc(maps.Keys(moves), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range byName {
		to := moves[p]
		m := disruption.Move{Pod: p, From: from[p], To: to, Replacement: -1}
		if i, ok := strings.CutPrefix(to, "replacement "); ok {
			m.To, m.Replacement = "", int(i[0]-'0')
		}
		cmd.Moves = append(cmd.Moves, m)
	}
	return cmd
}

// TestReplayFollowsEveryTie: no one can predict how kube-scheduler
// breaks a tie between top-scored nodes (by the order its parallel
// filters list them, from a rotating start, without extenders), so a
// command must land every pod whichever way each tie breaks. Node e and a new c4 both have 1 of 4 cpu used;
// the simulation sends small pods s1 and s2 to e and s3 with the large
// pod to the c4. Placed smallest first, s1 ties e and the c4: on e, s2
// then goes to the c4, s3 ties again, and whichever it takes the large pod
// finds its 2.5 cpu on the c4; had s1 gone to the c4, s2 would go to e,
// s3 tie again, and on the c4 it would leave the large pod 2 cpu. The replay must refuse the command (taking the first
// tied node, it passed it).
func TestReplayFollowsEveryTie(t *testing.T) {
	small := func(name string) *corev1.Pod { return pod(name, "500m", ownedBy("small")) }
	s1, s2, s3 := small("s1"), small("s2"), small("s3")
	large := pod("large", "2500m", ownedBy("large"))
	pending := pod("pending", "1")
	in := input(t, pool(),
		node{name: "e", it: "c4", pods: []*corev1.Pod{pod("resident", "1")}},
		node{name: "a", it: "c2", pods: []*corev1.Pod{s1, s2, s3}},
		node{name: "b", it: "c4", pods: []*corev1.Pod{large}},
	)
	from := map[*corev1.Pod]string{s1: "a", s2: "a", s3: "a", large: "b"}
	cmd := command([]string{"a", "b"}, []*scheduling.NewNodeClaim{replacement(pending, s3, large)},
		map[*corev1.Pod]string{s1: "e", s2: "e", s3: "replacement 0", large: "replacement 0"}, from)
	placed, why := disruption.Realise(in, cmd)
	if why.Kind != disruption.WhySchedulerWouldSpread || why.Pod != "default/large" {
		t.Errorf("the replay says %v (placements %v); want the large pod stranded when a tie sends two small pods to the c4", why, landings(placed))
	}
	if got := landings(placed)["large"]; got != "nowhere" {
		t.Errorf("the placements shown are not the tie choice that strands: the large pod lands on %s", got)
	}

	// Followed along the choices that strand nothing, it lands every pod.
	along := disruption.RealiseAlong(in, cmd, func(p *corev1.Pod, tied []disruption.Placement) disruption.Placement {
		if len(tied) == 0 {
			t.Fatalf("%s: no room on the way that strands nothing", p.Name)
		}
		if p.Name == "s1" && len(tied) != 2 {
			t.Errorf("s1 ties %v; want e and the c4", tied)
		}
		return tied[0]
	})
	want := map[string]string{"s1": "e", "s2": "replacement 0", "s3": "e", "large": "replacement 0"}
	if got := landings(along); !maps.Equal(got, want) {
		t.Errorf("placements along the first tied nodes %v, want %v", got, want)
	}
}

// TestReplayTiesBetweenInterchangeableNodes: forty pods that must not
// share a node each go to one of forty new c4s. Every pod ties the empty
// c4s left, but any of them is as good as another: the replay follows one
// and passes the command (following each tie choice would pass its bound
// on choices and refuse it).
func TestReplayTiesBetweenInterchangeableNodes(t *testing.T) {
	var ps []*corev1.Pod
	var reps []*scheduling.NewNodeClaim
	from := map[*corev1.Pod]string{}
	var nodes []node
	var candidates []string
	for i := range 40 {
		p := pod(fmt.Sprintf("w%d", i), "3", ownedBy("w"), apart("w"))
		ps = append(ps, p)
		reps = append(reps, replacement(p))
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, node{name: name, it: "c8", pods: []*corev1.Pod{p}})
		candidates = append(candidates, name)
		from[p] = name
	}
	in := input(t, pool(), nodes...)
	cmd := &disruption.Command{Method: disruption.MethodMultiNode, Candidates: candidates, Replacements: reps}
	for i, p := range ps {
		cmd.Moves = append(cmd.Moves, disruption.Move{Pod: p, From: from[p], Replacement: i})
	}
	placed, why := disruption.Realise(in, cmd)
	if !why.IsZero() {
		t.Fatalf("the replay refuses the command: %v", why)
	}
	seen := map[int]bool{}
	for _, p := range placed {
		if p.Replacement < 0 || seen[p.Replacement] {
			t.Errorf("%s lands on %q replacement %d: want a c4 of its own", p.Pod.Name, p.Node, p.Replacement)
		}
		seen[p.Replacement] = true
	}
}

// apart keeps the pods labelled app=app off each other's nodes (required
// hostname anti-affinity).
func apart(app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}}}
	}
}

// TestReplayCountsDaemonsAtNonZeroDefaults: kube-scheduler's
// NodeResourcesFit counts a container that requests no cpu or memory at
// 100m and 200 MiB, DaemonSet pods included. Node e (on-demand) runs the
// agent DaemonSet's pod; a new spot c4 will run the agent's and the spot
// termination handler's, neither requesting anything: it is the fuller of
// the two (200m against 100m), so the first of w's pods goes to e and the
// second, e then holding 1.1 cpu, to the c4. Counted at their requests,
// the daemons made the c4 look empty and the replay sent the first pod
// there.
func TestReplayCountsDaemonsAtNonZeroDefaults(t *testing.T) {
	noRequests := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }
	agent := pod("agent", "0", daemon, noRequests)
	handler := pod("handler", "0", daemon, noRequests, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{v1.LabelCapacityType: "spot"}
	})
	resident := pod("agent-e", "0", daemon, noRequests)
	w1, w2 := pod("w1", "1", ownedBy("w")), pod("w2", "1", ownedBy("w"))
	in := input(t, pool(),
		node{name: "e", it: "c4", pods: []*corev1.Pod{resident}},
		node{name: "a", it: "c4", pods: []*corev1.Pod{w1, w2}},
	)
	in.Cluster.DaemonSets = []*corev1.Pod{agent, handler}
	spot := replacement(w2)
	spot.Requirements = []scheduling.Requirement{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}}
	cmd := command([]string{"a"}, []*scheduling.NewNodeClaim{spot},
		map[*corev1.Pod]string{w1: "e", w2: "replacement 0"}, map[*corev1.Pod]string{w1: "a", w2: "a"})
	placed, why := disruption.Realise(in, cmd)
	if !why.IsZero() {
		t.Fatalf("the replay strands a pod: %v", why)
	}
	want := map[string]string{"w1": "e", "w2": "replacement 0"}
	if got := landings(placed); !maps.Equal(got, want) {
		t.Errorf("placements %v, want %v", got, want)
	}
}

// TestReplayRefusesWhatTooManyTiesLeaveOpen: twenty-four small pods of w
// may go to nodes a and b, which tie whenever they hold as many; x's
// large pod fits a only if a ends with at most twelve of them. Every
// way the ties break leaves a with twelve, but the replay would have to
// follow 2^12 choices to show it, more than it follows (32 besides its
// first path): it refuses the command rather than pass what it did not
// check.
func TestReplayRefusesWhatTooManyTiesLeaveOpen(t *testing.T) {
	var ws []*corev1.Pod
	moves, from := map[*corev1.Pod]string{}, map[*corev1.Pod]string{}
	for i := range 24 {
		w := pod(fmt.Sprintf("w%02d", i), "100m", ownedBy("w"))
		ws = append(ws, w)
		moves[w], from[w] = "a", "c"
		if i%2 == 1 {
			moves[w] = "b"
		}
	}
	x := pod("x", "6800m", ownedBy("x"))
	moves[x], from[x] = "a", "d"
	in := input(t, pool(),
		node{name: "a", it: "c8"},
		node{name: "b", it: "c8"},
		node{name: "c", it: "c4", pods: ws},
		node{name: "d", it: "c8", pods: []*corev1.Pod{x}},
	)
	cmd := command([]string{"c", "d"}, nil, moves, from)
	if _, why := disruption.Realise(in, cmd); why.Kind != disruption.WhySchedulerTiesUnfollowed {
		t.Errorf("the replay passes a command whose ties it did not follow: %v", why)
	}
	// Along the first tied node each time, x lands.
	along := disruption.RealiseAlong(in, cmd, func(_ *corev1.Pod, tied []disruption.Placement) disruption.Placement {
		if len(tied) == 0 {
			t.Fatal("a pod finds no room along the first tied nodes")
		}
		return tied[0]
	})
	if got := landings(along)["x"]; got != "a" {
		t.Errorf("x lands %s along the first tied nodes; want a", got)
	}
}
