package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Reducing a simulation's snapshot.
//
// A consolidation simulation moves a few pods; most of the cluster cannot
// take any of them and holds no pod their topology terms look at, yet the
// solver would prepare every node and every pod again for each simulation
// (most of its cost at 2,000 nodes). reduce hands it only what can change
// the answer, under the solver's own semantics:
//
//   - destinations (nodes whose free room fits the smallest moving pod)
//     stay, with the pods that any moving pod's spread, affinity or
//     anti-affinity selects, the pods whose anti-affinity selects a moving
//     pod, and pods with host ports or volumes; other pods are folded into
//     a smaller allocatable, so the free room is exactly the same;
//   - other nodes stay, marked for deletion (no pod lands on them, their
//     pods still count), only while they hold a pod that a zone-keyed (any
//     key but hostname) term or a hostname pod affinity counts: hostname
//     anti-affinity and spread only matter where a pod can land, and the
//     solver measures hostname skew against an empty new node;
//   - every other node is left out.
//
// Selectors are matched without their namespaces, which can only keep more
// pods than needed.

// term is one topology term of a pod, parsed once.
type term struct {
	sel labels.Selector
	// local: keyed by hostname and not a pod affinity, so it only matters
	// on nodes a pod may land on.
	local bool
}

// reducer caches what reduce needs across the simulations of one pass.
type reducer struct {
	capa  *capacity
	terms map[*corev1.Pod][]term
	full  map[*corev1.Pod]corev1.ResourceList
	*classes
}

// classes numbers the existing pods by their labels and anti-affinity
// terms: pods of one class are equally relevant to any simulation, so
// each simulation matches selectors once per class, not per pod. A pod's
// class never changes, so the engines of one decision (a composed
// command's steps, Validate's re-simulated steps) share one classes.
type classes struct {
	ids   map[string]int
	class map[*corev1.Pod]int
	// holders are existing pods with anti-affinity terms (they constrain
	// whoever lands near them).
	holders map[*corev1.Pod][]term
	// parsed: pods of one workload carry equal anti-affinity, so its
	// terms are parsed once, keyed by its protobuf encoding
	// (deterministic, and far cheaper than its String).
	parsed map[string][]term
	key    []byte
}

func newClasses() *classes {
	return &classes{ids: map[string]int{}, class: map[*corev1.Pod]int{}, holders: map[*corev1.Pod][]term{}, parsed: map[string][]term{}}
}

func newReducer(capa *capacity, snap *scheduling.Snapshot, cl *classes) *reducer {
	if cl == nil {
		cl = newClasses()
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			cl.add(p)
		}
	}
	return &reducer{capa: capa, terms: map[*corev1.Pod][]term{}, full: map[*corev1.Pod]corev1.ResourceList{}, classes: cl}
}

// add classes p, once.
func (cl *classes) add(p *corev1.Pod) {
	if _, ok := cl.class[p]; ok {
		return
	}
	key := appendLabels(cl.key[:0], p.Labels)
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		enc, err := a.PodAntiAffinity.Marshal()
		if err != nil {
			enc = []byte(a.PodAntiAffinity.String())
		}
		ts, ok := cl.parsed[string(enc)]
		if !ok {
			ts = antiTerms(a.PodAntiAffinity)
			cl.parsed[string(enc)] = ts
		}
		cl.holders[p] = ts
		key = append(append(key, 1), enc...)
	}
	// The lookup converts without copying; only a new class allocates
	// its key.
	id, ok := cl.ids[string(key)]
	if !ok {
		id = len(cl.ids)
		cl.ids[string(key)] = id
	}
	cl.class[p] = id
	cl.key = key
}

// appendLabels appends an encoding of ls that is equal for equal sets,
// keys sorted, each key and value ended by a 0 byte (neither may hold
// one): labels.Set.String's order without its strings.
func appendLabels(buf []byte, ls map[string]string) []byte {
	var arr [16]string
	keys := arr[:0]
	for k := range ls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		buf = append(append(buf, k...), 0)
		buf = append(append(buf, ls[k]...), 0)
	}
	return buf
}

// parse is a selector's labels.Selector.
func parse(ls *metav1.LabelSelector) labels.Selector {
	if ls == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Everything() // unreadable: keep whatever it might select
	}
	return sel
}

func antiTerms(a *corev1.PodAntiAffinity) []term {
	var out []term
	for _, t := range a.RequiredDuringSchedulingIgnoredDuringExecution {
		out = append(out, term{parse(t.LabelSelector), t.TopologyKey == corev1.LabelHostname})
	}
	for _, w := range a.PreferredDuringSchedulingIgnoredDuringExecution {
		out = append(out, term{parse(w.PodAffinityTerm.LabelSelector), w.PodAffinityTerm.TopologyKey == corev1.LabelHostname})
	}
	return out
}

// podTerms are p's spread, affinity and anti-affinity terms (preferences
// included: consolidation treats them as required).
func (r *reducer) podTerms(p *corev1.Pod) []term {
	if ts, ok := r.terms[p]; ok {
		return ts
	}
	var out []term
	for _, c := range p.Spec.TopologySpreadConstraints {
		out = append(out, term{parse(c.LabelSelector), c.TopologyKey == corev1.LabelHostname})
	}
	if a := p.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				out = append(out, term{parse(t.LabelSelector), false})
			}
			for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				out = append(out, term{parse(w.PodAffinityTerm.LabelSelector), false})
			}
		}
		if a.PodAntiAffinity != nil {
			out = append(out, antiTerms(a.PodAntiAffinity)...)
		}
	}
	r.terms[p] = out
	return out
}

func (r *reducer) requests(p *corev1.Pod) corev1.ResourceList {
	if rl, ok := r.full[p]; ok {
		return rl
	}
	rl := pods.Requests(p)
	r.full[p] = rl
	return rl
}

// pinned reports whether p must stay visible whatever the topology: its
// host ports and volumes take part in conflicts and attach limits, and its
// resource claims' devices count against the node's (folded into a
// smaller allocatable, they would look free).
func pinned(p *corev1.Pod) bool {
	if scheduling.HasResourceClaims(p) {
		return true
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				return true
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// reduce returns the nodes the solver needs to place moving on nodes.
func (r *reducer) reduce(nodes []*scheduling.ExistingNode, moving []*corev1.Pod) []*scheduling.ExistingNode {
	if len(moving) == 0 {
		return nodes
	}
	smallest := vec{1 << 62, 1 << 62, 1 << 62}
	var terms []term
	seenLabels, seenTerms := map[string]bool{}, map[string]bool{}
	var movingLabels []labels.Set
	for _, p := range moving {
		req := r.capa.request(p)
		for i := range smallest {
			smallest[i] = min(smallest[i], req[i])
		}
		for _, t := range r.podTerms(p) {
			if key := fmt.Sprint(t.local, t.sel); !seenTerms[key] {
				seenTerms[key] = true
				terms = append(terms, t)
			}
		}
		if key := labels.Set(p.Labels).String(); !seenLabels[key] {
			seenLabels[key] = true
			movingLabels = append(movingLabels, labels.Set(p.Labels))
		}
	}
	// relevance of an existing pod: 0 none, 1 only where pods may land,
	// 2 everywhere; the same for every pod of a class.
	byClass := map[int]int{}
	relevance := func(q *corev1.Pod) int {
		id, known := r.class[q]
		if level, ok := byClass[id]; known && ok {
			return level
		}
		level := r.relevance(q, terms, movingLabels)
		if known {
			byClass[id] = level
		}
		return level
	}
	out := make([]*scheduling.ExistingNode, 0, len(nodes))
	for _, n := range nodes {
		spare, known := r.capa.spare[n.Name]
		dest := n.Initialized && !n.MarkedForDeletion && known && smallest.fits(spare)
		if !n.Initialized {
			dest = true // keep in-flight nodes whole: landing there invalidates the decision
		}
		if dest && !n.Initialized {
			out = append(out, n)
			continue
		}
		var kept []*corev1.Pod
		var folded corev1.ResourceList
		foldedPods := int64(0)
		for _, q := range n.Pods {
			rel := relevance(q)
			if pinned(q) || rel == 2 || (dest && rel == 1) {
				kept = append(kept, q)
				continue
			}
			if dest {
				if folded == nil {
					folded = corev1.ResourceList{}
				}
				for name, qty := range r.requests(q) {
					sum := folded[name]
					sum.Add(qty)
					folded[name] = sum
				}
				foldedPods++
			}
		}
		switch {
		case dest:
			c := *n
			c.Pods = kept
			if foldedPods > 0 {
				c.Allocatable = n.Allocatable.DeepCopy()
				for name, qty := range folded {
					if a, ok := c.Allocatable[name]; ok {
						a.Sub(qty)
						if a.Sign() < 0 {
							a.Set(0)
						}
						c.Allocatable[name] = a
					}
				}
				if a, ok := c.Allocatable[corev1.ResourcePods]; ok {
					a.Set(max(a.Value()-foldedPods, 0))
					c.Allocatable[corev1.ResourcePods] = a
				}
			}
			out = append(out, &c)
		case len(kept) > 0:
			c := *n
			c.Pods, c.MarkedForDeletion = kept, true
			out = append(out, &c)
		}
	}
	return out
}

// relevance says where q matters to pods with these terms and labels: 0
// nowhere, 1 only on nodes they may land on, 2 everywhere.
func (r *reducer) relevance(q *corev1.Pod, terms []term, movingLabels []labels.Set) int {
	level := 0
	set := labels.Set(q.Labels)
	for _, t := range terms {
		if t.sel.Matches(set) {
			if !t.local {
				return 2
			}
			level = 1
		}
	}
	for _, t := range r.holders[q] {
		for _, l := range movingLabels {
			if t.sel.Matches(l) {
				if !t.local {
					return 2
				}
				level = 1
			}
		}
	}
	return level
}
