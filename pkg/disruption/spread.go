package disruption

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// spreads is the replay's model of PodTopologySpread's filter: a pod with
// a DoNotSchedule constraint may only land where its domain would not
// lead the emptiest domain by more than maxSkew. kube-scheduler counts
// the matching pods on the nodes the pod may use (nodeAffinityPolicy
// Honor, nodeTaintsPolicy Ignore: the defaults), so the replay counts
// them on the nodes that stay, the replacements and the candidates
// themselves: the evicted pods are recreated while the candidates drain,
// tainted but still counted (nodeTaintsPolicy Ignore), as the simulation
// counts them; each count grows as the pods land.
// Without it the replay sent the small pods of a hostname spread to
// whichever node scored best, where kube-scheduler had to put them on the
// emptiest hosts first, and a 100% budget command replaced 1,000 nodes by
// 700 twice in 13 minutes (docs/conformance.md, P16).
type spreads struct {
	// byKey holds the counts of each selector, topology key and set of
	// nodes a pod may use.
	byKey map[string]*spreadCount
	// landed are the pods the replay placed so far, by destination, for
	// the constraints built after them.
	landed []landing
}

type landing struct {
	dest string
	pod  *corev1.Pod
}

// spreadCount is how many pods a selector matches in each domain of a
// topology key during one replay.
type spreadCount struct {
	namespace string
	sel       labels.Selector
	// domain is each destination's domain ("" where the pod may not go
	// or the node lacks the key).
	domain map[string]string
	counts map[string]int
	// min is the lowest count among the domains and atMin how many are
	// there (counts only grow during a replay).
	min, atMin int
}

// spreadNode is a node a replay's pods may land on: a node that stays or
// a replacement.
type spreadNode struct {
	dest string
	node *corev1.Node
	pods []*corev1.Pod
}

// spreadNodes gathers the nodes of a replay: the base cluster's nodes
// (the candidates less the pods they lose), and the replacements labelled
// from their launch offering.
func (s *simulator) spreadNodes(replacements []*scheduling.NewNodeClaim, from map[*corev1.Pod]bool) []spreadNode {
	var out []spreadNode
	for _, n := range s.base.Nodes {
		ps := n.Pods
		for i, p := range ps {
			if from[p] {
				ps = slices.DeleteFunc(slices.Clone(ps[i:]), func(q *corev1.Pod) bool { return from[q] })
				ps = append(slices.Clone(n.Pods[:i]), ps...)
				break
			}
		}
		out = append(out, spreadNode{dest: n.Name, node: s.labelled(n.Name, n.Labels), pods: ps})
	}
	for i, nc := range replacements {
		it, o, ok := Launch(nc)
		if !ok {
			continue
		}
		l := map[string]string{}
		for k, v := range it.Requirements {
			if len(v) == 1 {
				l[k] = v[0]
			}
		}
		for _, r := range nc.Requirements {
			if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				l[r.Key] = r.Values[0]
			}
		}
		key := replacementKey(i)
		l[corev1.LabelHostname] = key
		l[corev1.LabelInstanceTypeStable] = it.Name
		l[corev1.LabelTopologyZone] = o.Zone
		l[v1.LabelCapacityType] = o.CapacityType
		l[v1.LabelNodePool] = nc.NodePool
		var stay []*corev1.Pod
		for _, p := range nc.Pods {
			if !from[p] {
				stay = append(stay, p)
			}
		}
		out = append(out, spreadNode{dest: key, node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: key, Labels: l}}, pods: stay})
	}
	return out
}

// labelled is a Node carrying the labels, built once per decision.
func (s *simulator) labelled(name string, l map[string]string) *corev1.Node {
	if s.nodeObjs == nil {
		s.nodeObjs = map[string]*corev1.Node{}
	}
	n := s.nodeObjs[name]
	if n == nil {
		n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
		s.nodeObjs[name] = n
	}
	return n
}

// spreadCheck is one DoNotSchedule constraint of one pod: the counts it
// reads and how far they may lean.
type spreadCheck struct {
	count      *spreadCount
	maxSkew    int
	minDomains int
	selfMatch  bool
}

// constraints are p's DoNotSchedule constraints, each reading the counts
// of its selector over the nodes it may use, built once per replay and
// shared by every pod that counts the same way (nil when p has none).
func (sp *spreads) constraints(p *corev1.Pod, nodes func() []spreadNode) []spreadCheck {
	var out []spreadCheck
	var affinity *nodeaffinity.RequiredNodeAffinity
	affinityKey := ""
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil || c.LabelSelector == nil {
			sel = labels.Nothing()
		}
		for _, k := range c.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		honour := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		if honour && affinity == nil {
			a := nodeaffinity.GetRequiredNodeAffinity(p)
			affinity = &a
			affinityKey = labels.Set(p.Spec.NodeSelector).String()
			if na := p.Spec.Affinity; na != nil && na.NodeAffinity != nil && na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				affinityKey += "|" + na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String()
			}
		}
		// A constraint whose selector misses the pod itself is left to
		// the solver: the solver plans such pods more leniently than
		// kube-scheduler filters them, and a replay stricter than the plan
		// would only strand pods the solver keeps placing (see
		// docs/migrating.md).
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		key := p.Namespace + "|" + c.TopologyKey + "|" + sel.String()
		if honour {
			key += "|" + affinityKey
		}
		sc := sp.byKey[key]
		if sc == nil {
			sc = sp.count(p.Namespace, c.TopologyKey, sel, honour, affinity, nodes())
			if sp.byKey == nil {
				sp.byKey = map[string]*spreadCount{}
			}
			sp.byKey[key] = sc
		}
		ck := spreadCheck{count: sc, maxSkew: int(c.MaxSkew), selfMatch: true}
		if c.MinDomains != nil {
			ck.minDomains = int(*c.MinDomains)
		}
		out = append(out, ck)
	}
	return out
}

// count counts the pods sel matches in each domain of key among nodes (those
// affinity lets the pod use, when honour), the pods landed so far included.
func (sp *spreads) count(ns, key string, sel labels.Selector, honour bool, affinity *nodeaffinity.RequiredNodeAffinity, nodes []spreadNode) *spreadCount {
	sc := &spreadCount{namespace: ns, sel: sel, domain: map[string]string{}, counts: map[string]int{}}
	for _, n := range nodes {
		d, ok := n.node.Labels[key]
		if !ok {
			continue
		}
		// A replacement's labels are only those its requirements fix: the
		// solver chose it for its pods, so it counts as a node they may use.
		if _, replacement := replacementIndex(n.dest); honour && !replacement {
			if m, err := affinity.Match(n.node); err != nil || !m {
				continue
			}
		}
		sc.domain[n.dest] = d
		count := sc.counts[d]
		for _, q := range n.pods {
			if sc.matches(q) {
				count++
			}
		}
		sc.counts[d] = count
	}
	for _, l := range sp.landed {
		if d, ok := sc.domain[l.dest]; ok && sc.matches(l.pod) {
			sc.counts[d]++
		}
	}
	sc.lowest()
	return sc
}

func (sc *spreadCount) lowest() {
	sc.min, sc.atMin = math.MaxInt, 0
	for _, n := range sc.counts {
		switch {
		case n < sc.min:
			sc.min, sc.atMin = n, 1
		case n == sc.min:
			sc.atMin++
		}
	}
}

// allows is PodTopologySpread's filter for one destination.
func (ck spreadCheck) allows(dest string) bool {
	sc := ck.count
	d, ok := sc.domain[dest]
	if !ok {
		return false
	}
	low := sc.min
	if len(sc.counts) < ck.minDomains {
		low = 0
	}
	self := 0
	if ck.selfMatch {
		self = 1
	}
	return sc.counts[d]+self-low <= ck.maxSkew
}

func (sc *spreadCount) matches(q *corev1.Pod) bool {
	return q.Namespace == sc.namespace && q.DeletionTimestamp == nil && sc.sel.Matches(labels.Set(q.Labels))
}

// land counts p, just placed on dest, in every constraint it matches.
func (sp *spreads) land(dest string, p *corev1.Pod) {
	sp.landed = append(sp.landed, landing{dest: dest, pod: p})
	for _, sc := range sp.byKey {
		if sc.matches(p) {
			sc.land(dest)
		}
	}
}

// land counts a matching pod landing on dest.
func (sc *spreadCount) land(dest string) {
	d, ok := sc.domain[dest]
	if !ok {
		return
	}
	n := sc.counts[d]
	sc.counts[d] = n + 1
	if n == sc.min {
		if sc.atMin--; sc.atMin == 0 {
			sc.lowest()
		}
	}
}

// hasHardSpread reports whether p has a DoNotSchedule constraint.
func hasHardSpread(p *corev1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}

// allowed reports whether every constraint lets a pod land on dest.
func allowed(cs []spreadCheck, dest string) bool {
	for _, ck := range cs {
		if !ck.allows(dest) {
			return false
		}
	}
	return true
}
