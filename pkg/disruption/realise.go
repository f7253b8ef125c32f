package disruption

import (
	"slices"
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
	rp := s.replay(r.moves, r.replacements, order, nil)
	for _, p := range rp.stranded {
		from := ""
		for _, m := range r.moves {
			if m.Pod == p {
				from = m.From
			}
		}
		r.failed[from] = true
		if r.reason.IsZero() {
			r.reason = rp.why(p)
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
// lands nowhere), and why a pod does not land (zero Why when every pod
// lands whichever way kube-scheduler breaks its score ties). Where scores
// tie, the placements are those of the first tied node, or of the tie
// choice that strands a pod when one does. It is what `simulate` and
// tests compare with kube-scheduler's own bindings.
func Realise(in *Input, cmd *Command) ([]Placement, Why) {
	rp := newSimulator(in).replay(cmd.Moves, cmd.Replacements, commandPods(in, cmd), nil)
	var why Why
	if len(rp.stranded) > 0 {
		why = rp.why(rp.stranded[0])
	}
	return rp.placed, why
}

// RealiseAlong replays cmd as Realise does, one pod at a time, but lets
// bind say where each pod lands: bind gets the pod and the placements
// kube-scheduler's score ties at the top (in the replay's order; none
// when the pod finds no room) and returns the one taken, and the replay
// goes on from there. A test drives the real kube-scheduler through it,
// checking that each binding is one of the tied placements. A placement
// that is no destination of the pod's controller, or has no room left,
// lands nowhere.
func RealiseAlong(in *Input, cmd *Command, bind func(p *corev1.Pod, tied []Placement) Placement) []Placement {
	return newSimulator(in).replay(cmd.Moves, cmd.Replacements, commandPods(in, cmd), bind).placed
}

// commandPods are the pods of cmd's candidates, in the candidates' order.
func commandPods(in *Input, cmd *Command) []*corev1.Pod {
	var order []*corev1.Pod
	for _, name := range cmd.Candidates {
		for i := range in.Nodes {
			if in.Nodes[i].Name == name {
				order = append(order, in.Nodes[i].Pods...)
			}
		}
	}
	return order
}

// replayed is what a replay found: where each pod landed, in order, and
// the pods that found no room (also in placed, landing nowhere).
type replayed struct {
	placed   []Placement
	stranded []*corev1.Pod
	// unfollowed is the pod whose tie the replay had no choices left to
	// follow (stranded too, though no room was shown lacking).
	unfollowed *corev1.Pod
}

// why is the reason stranded pod p fails its candidate.
func (rp replayed) why(p *corev1.Pod) Why {
	if p == rp.unfollowed {
		return Why{Kind: WhySchedulerTiesUnfollowed, Pod: podKey(p)}
	}
	return Why{Kind: WhySchedulerWouldSpread, Pod: podKey(p)}
}

// replay places the moved pods (those of candPods that moves name),
// smallest first, each on the node kube-scheduler's resource score ranks
// first (the scoring of the pod's scheduler profile, SCHEDULER_CONFIG's
// NodeResourcesFit strategy and NodeResourcesBalancedAllocation: see
// schedulerconfig.Scoring), among the nodes the simulation sent pods of the
// same controller to (nodes the solver found feasible for them; a
// controller whose pods must not share a node, by hostname anti-affinity
// or spread, takes no more of a node than the simulation gave it).
//
// No one controls how kube-scheduler breaks a tie between top-scored
// nodes (at random before v1.36; since, by the order its parallel filters
// list the feasible nodes, from a start that rotates), so the replay
// claims no outcome a tie could change: where the tied nodes are
// not interchangeable (see replayer.distinctTied) and a pod still to come
// could be left without room (replayer.safe), it follows every choice,
// and a pod any choice strands is stranded. Past maxTieBranches choices it
// stops and strands the pod of the tie it could not follow, so a command
// it cannot prove is refused, never passed. bind, when set, makes each
// choice instead (RealiseAlong).
//
// The replay does not filter topology spread. PodTopologySpread's filter
// was built here and measured (branch issue-33s-spread: a420075's filter
// over this replay): diverse-5000 went from 15 to 24 commands and 1.8 to
// 5.3 s of decision CPU, diverse-10000 from 13 to 24 and 2.6 to 12.2 s.
// The solver's domain counts were not the cause (they equalled the
// replay's in every stranded case sampled, and the plan's end counts were
// reachable one pod at a time): the replay pins a pod to the nodes the
// plan gave its controller and takes the pods smallest first, while
// kube-scheduler sends a spread pod to whichever allowed domain it finds
// as it comes, so a plan whose zones must fill in turn fails the replay in
// an order no one imposes. Pooling alike pods of no controller made it
// worse (46 commands on diverse-5000).
func (s *simulator) replay(moves []Move, replacements []*scheduling.NewNodeClaim, candPods []*corev1.Pod, bind func(*corev1.Pod, []Placement) Placement) replayed {
	capa := s.capacity()
	r := &replayer{
		scores:   s.scores(),
		capa:     capa,
		room:     map[string]vec{},
		dests:    map[string]*destination{},
		slots:    map[types.UID][]*slot{},
		onNode:   map[string][]*slot{},
		branches: maxTieBranches,
		bind:     bind,
	}
	from := make(map[*corev1.Pod]bool, len(moves))
	for _, m := range moves {
		from[m.Pod] = true
	}
	// The destinations: existing nodes by name, replacements by index as
	// the cheapest launch option (what launches) less the DaemonSets.
	for _, m := range moves {
		if _, seen := r.room[m.To]; m.Replacement >= 0 || seen {
			continue
		}
		r.room[m.To] = capa.spare[m.To]
		r.dests[m.To] = r.scores.existing(m.To)
	}
	for i, nc := range replacements {
		it, o, ok := Launch(nc)
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
		r.room[key] = left
		r.dests[key] = r.scores.replacement(it, o, nc, from)
	}
	// Where the simulation sent each controller's pods, and how many.
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
		for _, x := range r.slots[owner] {
			if x.node == node {
				sl = x
			}
		}
		if sl == nil {
			sl = &slot{owner: owner, node: node, exclusive: ownNode(m.Pod)}
			r.slots[owner] = append(r.slots[owner], sl)
			r.onNode[node] = append(r.onNode[node], sl)
		}
		sl.count++
	}
	// The order kube-scheduler sees them in is the ReplicaSet
	// controllers' (each recreates its evicted pods in a batch), which no
	// one controls: replay the one that hurts most, smallest pods first,
	// so the large ones come last to what room the small ones left.
	for _, p := range candPods {
		if byPod[p] {
			r.order = append(r.order, p)
		}
	}
	size := func(p *corev1.Pod) float64 {
		v := capa.request(p)
		return float64(v[0])/float64(max(capa.largest[0], 1)) + float64(v[1])/float64(max(capa.largest[1], 1))
	}
	sort.SliceStable(r.order, func(i, j int) bool { return size(r.order[i]) < size(r.order[j]) })
	for _, p := range r.order {
		if prof := r.scores.profile(p); !slices.Contains(r.profiles, prof) {
			r.profiles = append(r.profiles, prof)
		}
	}
	stranded := r.run(0)
	return replayed{placed: r.placed, stranded: stranded, unfollowed: r.unfollowed}
}

// maxTieBranches bounds the tie choices one replay follows besides its
// first path: each costs the rest of the replay, and a command whose
// outcome hangs on more ties than that is refused.
const maxTieBranches = 32

// replayer is one replay's state: each destination's room and score
// inputs, and each controller's slots.
type replayer struct {
	scores *kubeScores
	capa   *capacity
	order  []*corev1.Pod
	// profiles are the scheduler profiles the pods of order score with.
	profiles []string
	room     map[string]vec
	dests    map[string]*destination
	// slots are, by controller, the nodes the simulation sent its pods
	// to; onNode the same slots by node.
	slots  map[types.UID][]*slot
	onNode map[string][]*slot
	// branches is how many more tie choices the replay may follow.
	branches int
	bind     func(*corev1.Pod, []Placement) Placement
	placed   []Placement
	// unfollowed is the first pod whose tie was left unfollowed.
	unfollowed *corev1.Pod
}

// slot is a node the simulation sent count pods of one controller to,
// taken of which the replay landed there.
type slot struct {
	owner        types.UID
	node         string
	exclusive    bool
	count, taken int
}

// open reports whether another pod of the slot's controller may land on
// its node: any number may, unless the controller's pods must not share a
// node (then no more than the simulation put there).
func (sl *slot) open() bool { return !sl.exclusive || sl.taken < sl.count }

// run places order[i:] on the current path and returns the pods it
// strands: those of the first tie choice that strands some, else of the
// path that takes the first tied node each time (whose placements it
// leaves in placed).
func (r *replayer) run(i int) []*corev1.Pod {
	var stranded []*corev1.Pod
	for ; i < len(r.order); i++ {
		p := r.order[i]
		tied := r.top(p)
		switch {
		case r.bind != nil:
			tied = r.chosen(p, tied)
		case len(tied) > 1:
			classes := r.distinctTied(tied)
			if len(classes) == 1 || r.safe(i) {
				break
			}
			for _, alt := range classes[1:] {
				if r.branches == 0 {
					// Too many ties to follow: the command is not proven.
					tied = nil
					if r.unfollowed == nil {
						r.unfollowed = p
					}
					break
				}
				r.branches--
				mark := len(r.placed)
				r.land(p, alt)
				if s := r.run(i + 1); len(s) > 0 {
					return append(stranded, s...)
				}
				r.undo(mark)
			}
		}
		if len(tied) == 0 {
			stranded = append(stranded, p)
			r.placed = append(r.placed, Placement{Pod: p, Replacement: -1})
			continue
		}
		r.land(p, tied[0])
	}
	return stranded
}

// top is the nodes among p's controller's slots where p fits that
// kube-scheduler's score ranks first, tied, in the slots' order.
func (r *replayer) top(p *corev1.Pod) []string {
	req := r.capa.request(p)
	profile := r.scores.profile(p)
	use := r.scores.usage(profile, p)
	var best []string
	bestScore := int64(-1)
	for _, sl := range r.slots[controllerOf(p)] {
		if !r.admits(sl, req) {
			continue
		}
		switch score := r.dests[sl.node].score(r.scores, profile, use); {
		case score > bestScore:
			best, bestScore = append(best[:0], sl.node), score
		case score == bestScore:
			best = append(best, sl.node)
		}
	}
	return best
}

// chosen asks bind where p lands among tied and returns that node alone,
// or none when bind names no node p may land on.
func (r *replayer) chosen(p *corev1.Pod, tied []string) []string {
	ps := make([]Placement, len(tied))
	for i, n := range tied {
		ps[i] = placement(p, n)
	}
	node, ok := r.bind(p, ps).key()
	if !ok {
		return nil
	}
	req := r.capa.request(p)
	for _, sl := range r.slots[controllerOf(p)] {
		if sl.node == node && r.admits(sl, req) {
			return []string{node}
		}
	}
	return nil
}

// admits reports whether a pod of sl's controller that requests req may
// land on sl's node now: the slot is open and the node has the room.
func (r *replayer) admits(sl *slot, req vec) bool {
	return sl.open() && (vec{}).fits(r.room[sl.node].sub(req))
}

// land puts p on node.
func (r *replayer) land(p *corev1.Pod, node string) {
	r.room[node] = r.room[node].sub(r.capa.request(p))
	r.dests[node].land(r.scores, p)
	r.slotOf(p, node).taken++
	r.placed = append(r.placed, placement(p, node))
}

// undo takes back the placements after the first mark.
func (r *replayer) undo(mark int) {
	for _, pl := range slices.Backward(r.placed[mark:]) {
		node, ok := pl.key()
		if !ok {
			continue
		}
		r.room[node] = r.room[node].add(r.capa.request(pl.Pod))
		r.dests[node].unland(r.scores, pl.Pod)
		r.slotOf(pl.Pod, node).taken--
	}
	r.placed = r.placed[:mark]
}

func (r *replayer) slotOf(p *corev1.Pod, node string) *slot {
	for _, sl := range r.slots[controllerOf(p)] {
		if sl.node == node {
			return sl
		}
	}
	panic("replay: a pod landed outside its controller's slots")
}

// placement is p on the destination key node.
func placement(p *corev1.Pod, node string) Placement {
	if i, ok := replacementIndex(node); ok {
		return Placement{Pod: p, Replacement: i}
	}
	return Placement{Pod: p, Node: node, Replacement: -1}
}

// key is the destination key of pl's node, placement's inverse; false
// when pl lands nowhere.
func (pl Placement) key() (string, bool) {
	switch {
	case pl.Node != "":
		return pl.Node, true
	case pl.Replacement >= 0:
		return replacementKey(pl.Replacement), true
	}
	return "", false
}

// distinctTied groups the tied nodes into classes of interchangeable ones and
// returns one node of each, the first tied first. Two nodes are
// interchangeable when the replay cannot tell them apart from here on:
// the same room, allocatable and usage for every profile scored, and the
// same controllers' slots with the same places left on each. Swapping
// them maps every way the rest of the replay can go to one with the same
// outcome, so following one of a class is following all.
func (r *replayer) distinctTied(tied []string) []string {
	out := tied[:1:1]
	for _, n := range tied[1:] {
		if !slices.ContainsFunc(out, func(m string) bool { return r.interchangeable(m, n) }) {
			out = append(out, n)
		}
	}
	return out
}

func (r *replayer) interchangeable(a, b string) bool {
	if r.room[a] != r.room[b] {
		return false
	}
	sa, sb := r.onNode[a], r.onNode[b]
	if len(sa) != len(sb) {
		return false
	}
	for _, x := range sa {
		if !slices.ContainsFunc(sb, func(y *slot) bool {
			return x.owner == y.owner && (!x.exclusive || x.count-x.taken == y.count-y.taken)
		}) {
			return false
		}
	}
	da, db := r.dests[a], r.dests[b]
	for _, prof := range r.profiles {
		sc := r.scores.profiles[prof]
		if !slices.Equal(sc.Allocatable(da.alloc), sc.Allocatable(db.alloc)) {
			return false
		}
		ua, ub := da.usage(r.scores, prof), db.usage(r.scores, prof)
		if !slices.Equal(ua.Requested, ub.Requested) || !slices.Equal(ua.NonZero, ub.NonZero) {
			return false
		}
	}
	return true
}

// safe reports that no pod of order[i:] can be left without room however
// the ties among them break: each controller still to place has, on the
// nodes its pods may take, room for every pod that could land there at
// once, and places there for all its pods left (a sufficient condition:
// false says only that a tie might matter).
func (r *replayer) safe(i int) bool {
	rest := r.order[i:]
	worst := make(map[string]vec, len(r.room))
	for n, v := range r.room {
		worst[n] = v
	}
	left := map[types.UID]int{}
	for _, p := range rest {
		owner := controllerOf(p)
		left[owner]++
		for _, sl := range r.slots[owner] {
			worst[sl.node] = worst[sl.node].sub(r.capa.request(p))
		}
	}
	for owner, n := range left {
		places := 0
		for _, sl := range r.slots[owner] {
			if !(vec{}).fits(worst[sl.node]) {
				continue
			}
			if !sl.exclusive {
				places = n
				break
			}
			places += sl.count - sl.taken
		}
		if places < n {
			return false
		}
	}
	return true
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
