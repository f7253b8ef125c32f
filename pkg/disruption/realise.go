package disruption

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// follow checks that kube-scheduler would realise a consolidation
// simulation: a command pins no pod, so the pods it evicts land where
// kube-scheduler puts them, not where the solver packed them. With its
// default profile kube-scheduler sends each pod to the feasible node with
// the most room left (NodeResourcesFit's LeastAllocated score), so the
// first evicted pods spread over the emptiest nodes, the new ones first,
// and can take the room the solver kept on a tightly packed replacement
// for a large pod. That pod then goes pending, the provisioner launches a
// node for it, and the next pass re-packs again: upstream's "Wide
// Deployments" saw 54 commands move 13,105 pods this way.
//
// follow replays the candidates' pods (see replay) and fails the candidate
// of a pod that finds no room, as a pod the solver could not place does,
// so multi-node consolidation peels it and single-node consolidation
// passes over it.
func (s *simulator) follow(r *result) {
	if len(r.moves) == 0 {
		return
	}
	var order []*corev1.Pod
	for _, c := range r.cands {
		order = append(order, c.pods...)
	}
	for _, p := range s.replay(r.moves, r.replacements, order).stranded {
		from := ""
		for _, m := range r.moves {
			if m.Pod == p {
				from = m.From
			}
		}
		r.failed[from] = true
		if r.reason.IsZero() {
			r.reason = Why{Kind: WhySchedulerWouldSpread, Pod: podKey(p)}
		}
	}
}

// Placement is where kube-scheduler, as the replay predicts it, puts one
// pod a command evicts: an existing node by name, or Replacement (an
// index into Command.Replacements) when Node is "", or nowhere (Node ""
// and Replacement -1) when the pod finds no room.
type Placement struct {
	Pod         *corev1.Pod
	Node        string
	Replacement int
}

// Realise replays a command of one step as kube-scheduler would carry it
// out, the check every consolidation command passed (follow): where each
// evicted pod lands, in the order replayed (a pod that finds no room
// lands nowhere), and why the first such pod does not land (zero Why when
// every pod lands). It is what `simulate` and
// tests compare with kube-scheduler's own bindings.
func Realise(in *Input, cmd *Command) ([]Placement, Why) {
	s := newSimulator(in)
	var order []*corev1.Pod
	for _, name := range cmd.Candidates {
		for i := range in.Nodes {
			if in.Nodes[i].Name == name {
				order = append(order, in.Nodes[i].Pods...)
			}
		}
	}
	rp := s.replay(cmd.Moves, cmd.Replacements, order)
	var why Why
	if len(rp.stranded) > 0 {
		why = Why{Kind: WhySchedulerWouldSpread, Pod: podKey(rp.stranded[0])}
	}
	return rp.placed, why
}

// replayed is what a replay found: where each pod landed, in order, and
// the pods that found no room (also in placed, landing nowhere).
type replayed struct {
	placed   []Placement
	stranded []*corev1.Pod
}

// replay places the moved pods (those of order that moves name), smallest
// first, each on the node kube-scheduler's resource score ranks first
// (the scoring of the pod's scheduler profile, SCHEDULER_CONFIG's
// NodeResourcesFit strategy and NodeResourcesBalancedAllocation: see
// schedulerconfig.Scoring), among the nodes the simulation sent pods of the
// same controller to (nodes the solver found feasible for them; a
// controller whose pods must not share a node, by hostname anti-affinity
// or spread, takes no more of a node than the simulation gave it).
// kube-scheduler breaks a tie at random; the replay takes the first node
// the simulation named.
func (s *simulator) replay(moves []Move, replacements []*scheduling.NewNodeClaim, candPods []*corev1.Pod) replayed {
	var out replayed
	capa := s.capacity()
	from := make(map[*corev1.Pod]bool, len(moves))
	for _, m := range moves {
		from[m.Pod] = true
	}
	scores := s.scores()
	// The destinations: existing nodes by name, replacements by index as
	// the cheapest launch option (what launches) less the DaemonSets.
	room := map[string]vec{}
	dests := map[string]*destination{}
	for _, m := range moves {
		if _, seen := room[m.To]; m.Replacement >= 0 || seen {
			continue
		}
		room[m.To] = capa.spare[m.To]
		dests[m.To] = scores.existing(m.To)
	}
	for i, nc := range replacements {
		it, _, ok := Launch(nc)
		if !ok {
			continue
		}
		// What the candidates' pods may share: the type's allocatable less
		// the DaemonSets and the other pods the simulation put there
		// (Requests holds them all, but not the pods resource).
		a := vecOf(it.Allocatable())
		left := a.sub(vecOf(nc.Requests))
		left[2] = a[2] - int64(len(nc.Pods))
		for _, p := range nc.Pods {
			if _, moved := from[p]; moved {
				left = left.add(capa.request(p))
			}
		}
		key := replacementKey(i)
		room[key] = left
		dests[key] = scores.replacement(it, nc, from)
	}
	// Where the simulation sent each controller's pods, and how many.
	type slot struct {
		node  string
		count int
	}
	dest := map[types.UID][]*slot{}
	byPod := map[*corev1.Pod]bool{}
	for _, m := range moves {
		if pods.IsVirtual(m.Pod) {
			continue
		}
		node := m.To
		if m.Replacement >= 0 {
			node = replacementKey(m.Replacement)
		}
		byPod[m.Pod] = true
		owner := controllerOf(m.Pod)
		var sl *slot
		for _, x := range dest[owner] {
			if x.node == node {
				sl = x
			}
		}
		if sl == nil {
			sl = &slot{node: node}
			dest[owner] = append(dest[owner], sl)
		}
		sl.count++
	}
	// The order kube-scheduler sees them in is the ReplicaSet
	// controllers' (each recreates its evicted pods in a batch), which no
	// one controls: replay the one that hurts most, smallest pods first,
	// so the large ones come last to what room the small ones left.
	var order []*corev1.Pod
	for _, p := range candPods {
		if byPod[p] {
			order = append(order, p)
		}
	}
	size := func(p *corev1.Pod) float64 {
		v := capa.request(p)
		return float64(v[0])/float64(max(capa.largest[0], 1)) + float64(v[1])/float64(max(capa.largest[1], 1))
	}
	sort.SliceStable(order, func(i, j int) bool { return size(order[i]) < size(order[j]) })
	taken := map[types.UID]map[string]int{}
	for _, p := range order {
		owner := controllerOf(p)
		exclusive := ownNode(p)
		req := capa.request(p)
		profile := scores.profile(p)
		use := scores.usage(profile, p)
		best, bestScore := "", int64(-1)
		for _, sl := range dest[owner] {
			if exclusive && taken[owner][sl.node] >= sl.count {
				continue
			}
			if !(vec{}).fits(room[sl.node].sub(req)) {
				continue
			}
			if score := dests[sl.node].score(scores, profile, use); score > bestScore {
				best, bestScore = sl.node, score
			}
		}
		if best == "" {
			out.stranded = append(out.stranded, p)
			out.placed = append(out.placed, Placement{Pod: p, Replacement: -1})
			continue
		}
		room[best] = room[best].sub(req)
		dests[best].land(scores, p)
		if taken[owner] == nil {
			taken[owner] = map[string]int{}
		}
		taken[owner][best]++
		pl := Placement{Pod: p, Node: best, Replacement: -1}
		if i, ok := replacementIndex(best); ok {
			pl.Node, pl.Replacement = "", i
		}
		out.placed = append(out.placed, pl)
	}
	return out
}

// replacementKey names the i-th replacement among the destinations (no
// Node name has this shape).
func replacementKey(i int) string { return replacementPrefix + strconv.Itoa(i) }

const replacementPrefix = "\x00replacement/"

// replacementIndex is the index replacementKey named, if key is one.
func replacementIndex(key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, replacementPrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil
}

// controllerOf is the UID that groups a pod with its identical siblings:
// its controller's, or its own when it has none.
func controllerOf(p *corev1.Pod) types.UID {
	if ref := pods.ControllerOf(p); ref != nil {
		return ref.UID
	}
	if p.UID != "" {
		return p.UID
	}
	return types.UID(p.Namespace + "/" + p.Name)
}

// ownNode reports whether the pod's siblings may not pile onto one node:
// a required hostname anti-affinity or a DoNotSchedule hostname spread.
func ownNode(p *corev1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelHostname {
				return true
			}
		}
	}
	return false
}
