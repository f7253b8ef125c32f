package scheduling

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"math/bits"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

type topoKind int8

const (
	kindSpread topoKind = iota
	kindAffinity
	kindAnti
)

func (k topoKind) String() string {
	switch k {
	case kindSpread:
		return "topology spread"
	case kindAffinity:
		return "pod affinity"
	}
	return "pod anti-affinity"
}

// topoGroup is one topology term (a spread constraint or a pod
// (anti-)affinity term) shared by every pod that carries it, with the
// count of matching pods per domain. Hostname counts live on the nodes.
type topoGroup struct {
	id         int
	kind       topoKind
	key        string
	sel        labels.Selector
	namespaces map[string]bool // nil: every namespace
	preferred  bool
	weight     int32

	maxSkew       int32
	minDomains    int32
	honorAffinity bool
	honorTaints   bool
	// ownerAlts are, under nodeAffinityPolicy Honor, the nodes the owner
	// pod may use: its node selector with each of its OR'ed required node
	// affinity terms (one alternative without terms), as kube-scheduler
	// counts them.
	ownerAlts []ownerAlt
	ownerTols []corev1.Toleration

	counts    map[string]int // matching pods per domain (not hostname)
	owners    map[string]int // required anti-affinity owners per domain
	total     int            // matching pods anywhere
	hostNodes []*nodeState   // nodes holding matching pods (hostname affinity)

	universeDone bool
	universe     []string // domains a spread constraint is measured over
}

// ownerAlt is one alternative of the nodes a spread owner may use: the
// requirements of its node selector and one required node affinity term,
// the zone kept apart as a mask.
type ownerAlt struct {
	reqs  *reqSet
	zones uint64
}

// narrowed reports whether the owner's node selection leaves out some
// nodes (a spread's counts then depend on the nodes' labels).
func (g *topoGroup) narrowed(allZones uint64) bool {
	for _, a := range g.ownerAlts {
		if len(a.reqs.keys) > 0 || a.zones != allZones {
			return true
		}
	}
	return false
}

func (g *topoGroup) selects(ns string, l map[string]string) bool {
	if g.namespaces != nil && !g.namespaces[ns] {
		return false
	}
	return g.sel.Matches(labels.Set(l))
}

func (sv *solver) group(g *topoGroup, sig string) *topoGroup {
	if old, ok := sv.groupBy[sig]; ok {
		return old
	}
	g.id = len(sv.groups)
	g.counts = map[string]int{}
	g.owners = map[string]int{}
	sv.groups = append(sv.groups, g)
	sv.groupBy[sig] = g
	return g
}

// classGroups turns the pod's spread constraints and pod (anti-)affinity
// terms into shared groups.
func (sv *solver) classGroups(cb *classBase, p *corev1.Pod) error {
	var ownerAlts []ownerAlt // built once, for the first constraint that honours node affinity
	for _, tsc := range cb.spread {
		sel, err := spreadSelector(tsc, p.Labels)
		if err != nil {
			return fmt.Errorf("topology spread constraint %s: %w", tsc.TopologyKey, err)
		}
		g := &topoGroup{kind: kindSpread, key: normalizedKey(tsc.TopologyKey), sel: sel, namespaces: map[string]bool{p.Namespace: true}, maxSkew: max(tsc.MaxSkew, 1)}
		if tsc.MinDomains != nil {
			g.minDomains = *tsc.MinDomains
		}
		g.honorAffinity = tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		g.honorTaints = tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		sig := fmt.Sprintf("s|%s|%s|%s|%d|%d|%v|%v", g.key, sel.String(), p.Namespace, g.maxSkew, g.minDomains, g.honorAffinity, g.honorTaints)
		if g.honorAffinity {
			// kube-scheduler counts a node that matches the pod's node
			// selector and any one of its required node affinity terms
			// (not the volumes' topology, which the solver adds to its
			// own alternatives).
			if ownerAlts == nil {
				builders, err := podRequirementAlternatives(p, nil)
				if err != nil {
					return fmt.Errorf("topology spread constraint %s: %w", tsc.TopologyKey, err)
				}
				for _, b := range builders {
					a := ownerAlt{zones: sv.allZones}
					if z, ok := b[corev1.LabelTopologyZone]; ok {
						a.zones = sv.zoneMask(z)
						delete(b, corev1.LabelTopologyZone)
					}
					a.reqs = sv.intern(b.build())
					ownerAlts = append(ownerAlts, a)
				}
			}
			g.ownerAlts = ownerAlts
			for _, a := range ownerAlts {
				sig += "|" + a.reqs.signature() + fmt.Sprint(a.zones)
			}
		}
		if g.honorTaints {
			g.ownerTols = p.Spec.Tolerations
			j, _ := json.Marshal(p.Spec.Tolerations)
			sig += "|" + string(j)
		}
		g = sv.group(g, sig)
		if tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			cb.anyway = append(cb.anyway, g)
		} else {
			cb.required = append(cb.required, g)
		}
	}
	a := p.Spec.Affinity
	if a == nil {
		return nil
	}
	add := func(kind topoKind, term corev1.PodAffinityTerm, preferred bool, weight int32) (*topoGroup, error) {
		sel, err := affinitySelector(term, p.Labels)
		if err != nil {
			return nil, fmt.Errorf("%s term %s: %w", kind, term.TopologyKey, err)
		}
		g := &topoGroup{kind: kind, key: normalizedKey(term.TopologyKey), sel: sel, preferred: preferred, weight: weight}
		ns, err := sv.termNamespaces(term, p.Namespace)
		if err != nil {
			return nil, fmt.Errorf("%s term %s: %w", kind, term.TopologyKey, err)
		}
		g.namespaces = ns
		nsKeys := make([]string, 0, len(g.namespaces))
		for n := range g.namespaces {
			nsKeys = append(nsKeys, n)
		}
		sort.Strings(nsKeys)
		sig := fmt.Sprintf("a|%d|%s|%s|%v|%v|%s", kind, g.key, sel.String(), g.namespaces == nil, preferred, strings.Join(nsKeys, ","))
		return sv.group(g, sig), nil
	}
	if pa := a.PodAffinity; pa != nil {
		for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			g, err := add(kindAffinity, t, false, 0)
			if err != nil {
				return err
			}
			cb.required = append(cb.required, g)
		}
		for _, t := range sortedWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution) {
			g, err := add(kindAffinity, t.PodAffinityTerm, true, t.Weight)
			if err != nil {
				return err
			}
			cb.prefAff = append(cb.prefAff, g)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			g, err := add(kindAnti, t, false, 0)
			if err != nil {
				return err
			}
			cb.required = append(cb.required, g)
		}
		for _, t := range sortedWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution) {
			g, err := add(kindAnti, t.PodAffinityTerm, true, t.Weight)
			if err != nil {
				return err
			}
			cb.prefAnti = append(cb.prefAnti, g)
		}
	}
	return nil
}

func sortedWeighted(ts []corev1.WeightedPodAffinityTerm) []corev1.WeightedPodAffinityTerm {
	out := append([]corev1.WeightedPodAffinityTerm(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out
}

// indexNamespaces keeps the snapshot's namespace labels for
// namespaceSelector, each with the kubernetes.io/metadata.name label the API
// server sets on every namespace.
func (sv *solver) indexNamespaces() {
	if sv.snap.Namespaces == nil {
		return
	}
	sv.nsLabels = make(map[string]map[string]string, len(sv.snap.Namespaces))
	for _, ns := range sv.snap.Namespaces {
		l := make(map[string]string, len(ns.Labels)+1)
		for k, v := range ns.Labels {
			l[k] = v
		}
		l[corev1.LabelMetadataName] = ns.Name
		sv.nsLabels[ns.Name] = l
	}
}

// termNamespaces is the set of namespaces whose pods an affinity term
// selects (nil: every namespace): the union of the listed namespaces and
// those namespaceSelector matches; the pod's own namespace when neither is
// given. An empty namespaceSelector matches every namespace; a non-empty
// one is evaluated against the snapshot's namespaces, or counts every
// namespace when the snapshot has none.
func (sv *solver) termNamespaces(t corev1.PodAffinityTerm, own string) (map[string]bool, error) {
	m := map[string]bool{}
	for _, n := range t.Namespaces {
		m[n] = true
	}
	if t.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("namespaceSelector: %w", err)
		}
		if sel.Empty() || sv.nsLabels == nil {
			return nil, nil
		}
		for name, l := range sv.nsLabels {
			if sel.Matches(labels.Set(l)) {
				m[name] = true
			}
		}
		return m, nil
	}
	if len(m) == 0 {
		m[own] = true
	}
	return m, nil
}

func spreadSelector(tsc corev1.TopologySpreadConstraint, podLabels map[string]string) (labels.Selector, error) {
	sel, err := labelSelector(tsc.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := podLabels[k]; ok {
			r, err := labels.NewRequirement(k, selection.Equals, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

func affinitySelector(t corev1.PodAffinityTerm, podLabels map[string]string) (labels.Selector, error) {
	sel, err := labelSelector(t.LabelSelector)
	if err != nil {
		return nil, err
	}
	for _, k := range t.MatchLabelKeys {
		if v, ok := podLabels[k]; ok {
			r, err := labels.NewRequirement(k, selection.In, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := podLabels[k]; ok {
			r, err := labels.NewRequirement(k, selection.NotIn, []string{v})
			if err != nil {
				return nil, err
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}

func labelSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// buildExistingGroups registers the required anti-affinity of pods already
// running, which keeps matching pending pods out of their domains. The
// pods of one workload carry equal terms: a term that reads neither the
// pod's own labels (matchLabelKeys, mismatchLabelKeys) nor namespace
// labels is numbered by the solve's Prepared (antiTermOf) and turned into
// its group once per number, reused for every pod that carries an equal
// one.
func (sv *solver) buildExistingGroups() {
	pr := sv.opts.prepared
	byID, made := make([]*topoGroup, pr.nAntiTerms), make([]bool, pr.nAntiTerms)
	for _, n := range sv.existing {
		for _, p := range n.ex.Pods {
			a := p.Spec.Affinity
			if a == nil || a.PodAntiAffinity == nil {
				continue
			}
			f := pr.facts(p)
			for i, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				var g *topoGroup
				switch id := f.anti[i]; {
				case id < 0:
					g = sv.existingAntiGroup(t, p)
				case made[id]:
					g = byID[id]
				default:
					g = sv.existingAntiGroup(t, p)
					byID[id], made[id] = g, true
				}
				if g != nil {
					sv.recordOwner(g, n)
				}
			}
		}
	}
}

// sameTerm reports whether two affinity terms without namespace selectors
// or label keys select the same pods in the same namespaces.
func sameTerm(a, b corev1.PodAffinityTerm) bool {
	if a.TopologyKey != b.TopologyKey || !slices.Equal(a.Namespaces, b.Namespaces) || (a.LabelSelector == nil) != (b.LabelSelector == nil) {
		return false
	}
	return a.LabelSelector == nil || SameLabelSelector(a.LabelSelector, b.LabelSelector)
}

// SameLabelSelector reports whether two label selectors are equal, field
// by field (the pods of one workload each carry their own copy).
func SameLabelSelector(a, b *metav1.LabelSelector) bool {
	return maps.Equal(a.MatchLabels, b.MatchLabels) &&
		slices.EqualFunc(a.MatchExpressions, b.MatchExpressions, func(x, y metav1.LabelSelectorRequirement) bool {
			return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
		})
}

// existingAntiGroup is the group of a running pod's required
// anti-affinity term; nil when the term cannot be read.
func (sv *solver) existingAntiGroup(t corev1.PodAffinityTerm, p *corev1.Pod) *topoGroup {
	sel, err := affinitySelector(t, p.Labels)
	if err != nil {
		return nil
	}
	ns, err := sv.termNamespaces(t, p.Namespace)
	if err != nil {
		return nil
	}
	g := &topoGroup{kind: kindAnti, key: normalizedKey(t.TopologyKey), sel: sel, namespaces: ns}
	nsKeys := make([]string, 0, len(g.namespaces))
	for n := range g.namespaces {
		nsKeys = append(nsKeys, n)
	}
	sort.Strings(nsKeys)
	sig := fmt.Sprintf("a|%d|%s|%s|%v|%v|%s", kindAnti, g.key, sel.String(), g.namespaces == nil, false, strings.Join(nsKeys, ","))
	return sv.group(g, sig)
}

func (sv *solver) linkSelectedBy(cb *classBase) {
	for _, g := range sv.groups {
		if g.selects(cb.ns, cb.labels) {
			cb.selectedBy = append(cb.selectedBy, g)
		}
	}
	check := func(gs []*topoGroup) {
		for _, g := range gs {
			switch g.key {
			case corev1.LabelTopologyZone:
				cb.zoneRelevant = true
			case v1.LabelCapacityType:
				cb.ctRelevant = true
			}
		}
	}
	check(cb.selectedBy)
	check(cb.required)
	check(cb.prefAff)
	check(cb.prefAnti)
	check(cb.anyway)
}

// countExistingPods records the pods already bound to existing nodes.
// Pods of one namespace and one label set are selected by the same
// groups, so each such set (numbered by the solve's Prepared, labelSetOf)
// is matched once.
func (sv *solver) countExistingPods() {
	pr := sv.opts.prepared
	byID, matched := make([][]*topoGroup, pr.nLabelSets), make([]bool, pr.nLabelSets)
	for _, n := range sv.existing {
		for _, p := range n.ex.Pods {
			f := pr.facts(p)
			if !matched[f.labelSet] {
				byID[f.labelSet], matched[f.labelSet] = sv.selecting(p), true
			}
			for _, g := range byID[f.labelSet] {
				sv.recordMatch(g, n)
			}
		}
	}
}

// selecting are the groups whose selector matches p.
func (sv *solver) selecting(p *corev1.Pod) []*topoGroup {
	var gs []*topoGroup
	for _, g := range sv.groups {
		if g.selects(p.Namespace, p.Labels) {
			gs = append(gs, g)
		}
	}
	return gs
}

// LabelsHash hashes a label set whatever the map's iteration order (a sum
// of its pairs' hashes); equal sets hash equal, and a caller confirms a
// match by comparing the sets (maps.Equal, SameLabelSelector).
func LabelsHash(seed maphash.Seed, m map[string]string) uint64 {
	var h uint64
	for k, v := range m {
		h += maphash.String(seed, k)*0x9e3779b97f4a7c15 ^ maphash.String(seed, v)
	}
	return h
}

// hostCount is a node's count for one hostname-keyed group.
type hostCount struct {
	g      *topoGroup
	match  int32
	owners int32
}

func (n *nodeState) host(g *topoGroup) *hostCount {
	for i := range n.hosts {
		if n.hosts[i].g == g {
			return &n.hosts[i]
		}
	}
	return nil
}

func (n *nodeState) hostMatch(g *topoGroup) int32 {
	if h := n.host(g); h != nil {
		return h.match
	}
	return 0
}

func (n *nodeState) hostOwners(g *topoGroup) int32 {
	if h := n.host(g); h != nil {
		return h.owners
	}
	return 0
}

func (n *nodeState) hostEntry(g *topoGroup) *hostCount {
	if h := n.host(g); h != nil {
		return h
	}
	n.hosts = append(n.hosts, hostCount{g: g})
	return &n.hosts[len(n.hosts)-1]
}

func (sv *solver) recordMatch(g *topoGroup, n *nodeState) {
	if g.kind == kindSpread && !sv.spreadCounts(g, n) {
		return
	}
	g.total++
	if g.key == corev1.LabelHostname {
		h := n.hostEntry(g)
		h.match++
		if h.match == 1 && g.kind == kindAffinity {
			g.hostNodes = append(g.hostNodes, n)
		}
		return
	}
	if d, ok := sv.nodeDomain(n, g.key); ok {
		g.counts[d]++
	}
}

func (sv *solver) recordOwner(g *topoGroup, n *nodeState) {
	if g.key == corev1.LabelHostname {
		n.hostEntry(g).owners++
		return
	}
	if d, ok := sv.nodeDomain(n, g.key); ok {
		g.owners[d]++
	}
}

// spreadCounts reports whether pods on n count for spread group g under
// its nodeAffinityPolicy and nodeTaintsPolicy.
func (sv *solver) spreadCounts(g *topoGroup, n *nodeState) bool {
	if g.honorAffinity && len(g.ownerAlts) > 0 && !slices.ContainsFunc(g.ownerAlts, func(a ownerAlt) bool { return sv.altAdmits(a, n) }) {
		return false
	}
	if g.honorTaints {
		taints := n.taints()
		if _, bad := untolerated(taints, g.ownerTols, true); bad {
			return false
		}
	}
	return true
}

// altAdmits reports whether node n is one of those alternative a admits:
// an existing node by its labels (a zone the alternative names must be the
// node's), a planned one when its requirements can meet a's.
func (sv *solver) altAdmits(a ownerAlt, n *nodeState) bool {
	if n.ex == nil {
		return n.zones&a.zones != 0 && sv.merge(n.reqs, a.reqs) != nil
	}
	if !labelsSatisfy(n.ex.Labels, a.reqs) {
		return false
	}
	if a.zones == sv.allZones {
		return true
	}
	z, ok := n.ex.Labels[corev1.LabelTopologyZone]
	if !ok {
		return false
	}
	zi, ok := sv.zoneIdx[z]
	return ok && a.zones&(1<<zi) != 0
}

// nodeDomain is n's value for key, if decided.
func (sv *solver) nodeDomain(n *nodeState, key string) (string, bool) {
	if n.ex != nil {
		v, ok := n.ex.Labels[key]
		return v, ok
	}
	switch key {
	case corev1.LabelTopologyZone:
		if bits.OnesCount64(n.zones) == 1 {
			return sv.zones[bits.TrailingZeros64(n.zones)], true
		}
		return "", false
	case v1.LabelCapacityType:
		if bits.OnesCount32(n.cts) == 1 {
			return sv.cts[bits.TrailingZeros32(n.cts)], true
		}
		return "", false
	}
	if c, ok := n.reqs.get(key); ok && !c.comp && len(c.vals) == 1 && !c.absent {
		return c.vals[0], true
	}
	return "", false
}

// spreadUniverse is the set of domains spread group g is measured over:
// as kube-scheduler does, only the domains of nodes the owner pod could
// use count (its node selector and required node affinity under
// nodeAffinityPolicy Honor, its tolerations under nodeTaintsPolicy
// Honor). A NodePool's potential domains count only when the pool, and
// of it the instance types, meet those, so another pool's zones never
// hold the pod's spread back (kubernetes-sigs/karpenter#2623).
func (sv *solver) spreadUniverse(g *topoGroup) []string {
	if g.universeDone {
		return g.universe
	}
	g.universeDone = true
	set := map[string]bool{}
	alts := g.ownerAlts
	if !g.honorAffinity || len(alts) == 0 {
		alts = []ownerAlt{{zones: sv.allZones}}
	}
	for _, p := range sv.pools {
		if g.honorTaints {
			if _, bad := untolerated(p.np.Taints, g.ownerTols, true); bad {
				continue
			}
		}
		for _, a := range alts {
			sv.poolDomains(g, p, a, set)
		}
	}
	for _, n := range sv.existing {
		if v, ok := n.ex.Labels[g.key]; ok && sv.spreadCounts(g, n) {
			set[v] = true
		}
	}
	for v := range set {
		g.universe = append(g.universe, v)
	}
	sort.Strings(g.universe)
	return g.universe
}

// poolDomains adds to set the domains of g's key that pool p's nodes
// admitted by alternative a (its requirements and zones, when they
// narrow) may have.
func (sv *solver) poolDomains(g *topoGroup, p *poolT, a ownerAlt, set map[string]bool) {
	types := p.types
	if a.reqs != nil {
		m := sv.merge(p.base, a.reqs)
		if m == nil {
			return
		}
		fit := sv.typesFor(p, m)
		types = nil
		for i, t := range p.types {
			if fit.has(i) {
				types = append(types, t)
			}
		}
	}
	admit := func(v string) {
		if a.reqs != nil {
			if c, ok := a.reqs.get(g.key); ok && !c.allows(v) {
				return
			}
		}
		set[v] = true
	}
	switch g.key {
	case corev1.LabelTopologyZone:
		var z uint64
		for _, t := range types {
			z |= t.offeredZones(p.cts)
		}
		for _, name := range sv.zoneNames(z & p.zones & a.zones) {
			set[name] = true
		}
	case v1.LabelCapacityType:
		for ci, name := range sv.cts {
			if p.cts&(1<<ci) == 0 {
				continue
			}
			for _, t := range types {
				if t.avail[ci] != 0 {
					admit(name)
					break
				}
			}
		}
	default:
		if c, ok := p.base.get(g.key); ok && !c.comp {
			for _, v := range c.vals {
				admit(v)
			}
		} else {
			for _, t := range types {
				for _, v := range t.reqs[g.key] {
					if !ok || c.allows(v) {
						admit(v)
					}
				}
			}
		}
	}
}

// spreadMin is the smallest count over g's domains (0 when fewer domains
// than minDomains exist).
func (sv *solver) spreadMin(g *topoGroup) int {
	u := sv.spreadUniverse(g)
	if len(u) == 0 || int32(len(u)) < g.minDomains {
		return 0
	}
	m := -1
	for _, d := range u {
		if c := g.counts[d]; m < 0 || c < m {
			m = c
		}
	}
	return m
}

// domainAllowed reports whether a pod of class base cb (owner of g) may
// land in domain d of the non-hostname group g.
func (sv *solver) domainAllowed(g *topoGroup, cb *classBase, d string, minCount int) bool {
	self := g.selects(cb.ns, cb.labels)
	switch g.kind {
	case kindSpread:
		s := 0
		if self {
			s = 1
		}
		return g.counts[d]+s-minCount <= int(g.maxSkew)
	case kindAffinity:
		return g.counts[d] > 0 || (g.total == 0 && self)
	default:
		return g.counts[d] == 0
	}
}

func labelsSatisfy(l map[string]string, r *reqSet) bool {
	for i, k := range r.keys {
		v, ok := l[k]
		c := r.cons[i]
		if !ok {
			if !c.absent {
				return false
			}
			continue
		}
		if !c.allows(v) {
			return false
		}
	}
	return true
}
