package scheduling

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// classBase is an equivalence class of pending pods: same namespace,
// labels, requests, node selection, tolerations, topology terms and
// volumes. Identical pods are checked once and placed in bulk.
type classBase struct {
	idx    int
	key    string
	pods   []*corev1.Pod
	req    resVec
	ns     string
	labels map[string]string
	tols   []corev1.Toleration
	tier   int
	// spread are the pods' topology spread constraints as kube-scheduler
	// applies them: their own, else the cluster defaults (DefaultSpread).
	spread []corev1.TopologySpreadConstraint

	// Node requirements: nodeSelector and volume topology are always
	// required; terms are the OR'ed required node affinity terms (tried in
	// order); prefNode the preferred terms, heaviest first.
	terms    []reqBuilder
	prefNode []reqBuilder

	required []*topoGroup // DoNotSchedule spread, required (anti-)affinity
	prefAff  []*topoGroup // heaviest first
	prefAnti []*topoGroup
	anyway   []*topoGroup // ScheduleAnyway spread
	// selectedBy are the groups whose selector matches these pods.
	selectedBy []*topoGroup
	// zoneRelevant pods need their node's zone decided before they land.
	zoneRelevant bool
	// ctRelevant pods need their node's capacity type decided.
	ctRelevant bool

	shape      *shapeT        // classes with the same requests share it
	placed     int            // pods of the class placed so far in this run
	hostPorts  []hostPort     // ports the pods bind on their node
	err        Reason         // why these pods can never be placed
	volDrivers map[string]int // CSI volumes by driver
	// devices are the pods' device requests (IGNORE_DRA_REQUESTS=false).
	devices  []DeviceRequest
	variants []*podClass
	// twin numbers the classes' distinct namespace and labels: pods of
	// the same twin are selected by the same topology groups, so
	// exchanging two of them keeps every count (twins.go).
	twin int
}

// shapeT is what classes with identical requests share: how far into each
// node list every node is too full for them.
type shapeT struct {
	cursors [2][]int
}

// podClass is one relaxation step of a classBase: the requirements,
// topology terms and tolerations in force at that step, and the caches the
// packer keeps per step.
type podClass struct {
	base  *classBase
	level int
	relax relaxState

	reqs *reqSet // without zone and capacity type
	// zoneCon and ctCon are the pod's own zone and capacity-type
	// constraints (nil when it has none), kept for reasons.
	zoneCon, ctCon *constraint
	zones          uint64
	cts            uint32
	own            []*topoGroup
	ownSelf        []bool // whether each own group selects these pods
	tolPNS         bool

	poolOK    []int8 // 0 unknown, 1 compatible, -1 not
	poolTypes []bitset
	exOK      []int8
	solo      []float64 // per pool: price of a node for one pod alone
	exCursor  int
	cursors   [2][]int
	// movable caches solver.movable: 0 unknown, 1 movable, -1 not (the
	// class's groups are fixed once the classes are built).
	movable int8
	// pinned caches what of solver.fixedIn depends on the class alone, as
	// movable does.
	pinned int8
}

type relaxState struct {
	term, prefNode, prefAff, prefAnti, anyway int
	tolPNS                                    bool
}

func (cb *classBase) less(o *classBase) bool {
	if cb.tier != o.tier {
		return cb.tier < o.tier
	}
	if cb.req[resCPU] != o.req[resCPU] {
		return cb.req[resCPU] > o.req[resCPU]
	}
	if cb.req[resMemory] != o.req[resMemory] {
		return cb.req[resMemory] > o.req[resMemory]
	}
	return cb.key < o.key
}

func (sv *solver) buildClasses() error {
	byKey := map[string]*classBase{}
	pending := append([]*corev1.Pod(nil), sv.snap.Pods...)
	sort.SliceStable(pending, func(i, j int) bool {
		if pending[i].Namespace != pending[j].Namespace {
			return pending[i].Namespace < pending[j].Namespace
		}
		return pending[i].Name < pending[j].Name
	})
	var b strings.Builder
	shapes := map[string]*shapeT{}
	twins := map[[2]string]int{}
	for _, p := range pending {
		if pods.IsOwnedByDaemonSet(p) {
			continue
		}
		f := sv.pendingFacts(p)
		req := sv.cachedPodVec(p, f)
		key := sv.podClassKey(&b, p, f, req)
		cb, ok := byKey[key]
		if !ok {
			if f != nil {
				req = req.clone() // the Prepared's copy stays as read
			}
			cb = &classBase{idx: len(sv.classes), key: key, req: req, ns: p.Namespace, labels: p.Labels, tols: p.Spec.Tolerations, spread: sv.snap.DefaultSpread.For(p)}
			sk := vecKey(req)
			if cb.shape = shapes[sk]; cb.shape == nil {
				cb.shape = &shapeT{}
				for i := range cb.shape.cursors {
					cb.shape.cursors[i] = make([]int, 1+len(sv.zones))
				}
				shapes[sk] = cb.shape
			}
			byKey[key] = cb
			cb.twin = twinOf(twins, key)
			sv.classes = append(sv.classes, cb)
			if err := sv.describeClass(cb, p); err != nil {
				cb.err = classError(err)
			}
			if r := sv.dynamicResourcesReason(p); r != nil {
				cb.err = r
			}
		}
		cb.pods = append(cb.pods, p)
	}
	sv.buildExistingGroups()
	for _, cb := range sv.classes {
		sv.linkSelectedBy(cb)
	}
	sv.countExistingPods()
	return nil
}

// twinOf numbers the namespace and labels of a class key (classKey writes
// them first, between its first three '|', which neither a namespace, a
// request nor a label may contain), in the order they are first seen.
func twinOf(twins map[[2]string]int, key string) int {
	ns, rest, _ := strings.Cut(key, "|")
	_, rest, _ = strings.Cut(rest, "|")
	labels, _, _ := strings.Cut(rest, "|")
	k := [2]string{ns, labels}
	id, ok := twins[k]
	if !ok {
		id = len(twins)
		twins[k] = id
	}
	return id
}

// podClassKey is p's classKey, from f (p's facts, nil when the solve is
// not prepared) when the solve shares the Prepared's dimensions and
// default spread.
func (sv *solver) podClassKey(b *strings.Builder, p *corev1.Pod, f *podFacts, req resVec) string {
	if f == nil || sv.ri != sv.opts.prepared.ri {
		b.Reset()
		classKey(b, p, req, sv.snap.DefaultSpread.For(p))
		return b.String()
	}
	if !f.keyed || f.keySpread != sv.snap.DefaultSpread {
		b.Reset()
		classKey(b, p, req, sv.snap.DefaultSpread.For(p))
		f.key, f.keySpread, f.keyed = b.String(), sv.snap.DefaultSpread, true
	}
	return f.key
}

func classKey(b *strings.Builder, p *corev1.Pod, req resVec, spread []corev1.TopologySpreadConstraint) {
	b.WriteString(p.Namespace)
	b.WriteByte('|')
	for _, x := range req {
		b.WriteString(strconv.FormatInt(x, 36))
		b.WriteByte(',')
	}
	b.WriteByte('|')
	writeSortedMap(b, p.Labels)
	b.WriteByte('|')
	writeSortedMap(b, p.Spec.NodeSelector)
	s := &p.Spec
	if s.Affinity != nil || len(s.Tolerations) > 0 || len(spread) > 0 {
		j, _ := json.Marshal([]any{s.Affinity, s.Tolerations, spread})
		b.Write(j)
	}
	writeClaimsKey(b, p)
	if pods.IsVirtual(p) {
		b.WriteString("|virtual")
	}
	for _, hp := range podHostPorts(p) {
		b.WriteString("|port:")
		b.WriteString(hp.String())
	}
	for _, v := range s.Volumes {
		if v.PersistentVolumeClaim != nil {
			b.WriteString("|pvc:")
			b.WriteString(v.PersistentVolumeClaim.ClaimName)
		} else if inTreePlugin(&v.VolumeSource) != "" {
			b.WriteString("|intree:")
			b.WriteString(v.Name)
		}
	}
}

func writeSortedMap(b *strings.Builder, m map[string]string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte(',')
	}
}

// podRequirementAlternatives returns nodeSelector ∧ term for each required
// node affinity term (or just the nodeSelector), plus extra.
func podRequirementAlternatives(p *corev1.Pod, extra reqBuilder) ([]reqBuilder, error) {
	base := reqBuilder{}
	for k, v := range p.Spec.NodeSelector {
		base.add(normalizedKey(k), constraint{vals: []string{v}})
	}
	for k, c := range extra {
		base.add(k, c)
	}
	var terms []corev1.NodeSelectorTerm
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	if len(terms) == 0 {
		return []reqBuilder{base}, nil
	}
	var out []reqBuilder
	for _, t := range terms {
		b := reqBuilder{}
		for k, c := range base {
			b[k] = c
		}
		if err := addTerm(b, t.MatchExpressions); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func addTerm(b reqBuilder, exprs []corev1.NodeSelectorRequirement) error {
	for _, e := range exprs {
		if err := b.addRequirement(normalizedKey(e.Key), e.Operator, e.Values); err != nil {
			return err
		}
	}
	return nil
}

// describeClass derives requirements, topology groups and volume facts from
// the class's first pod.
func (sv *solver) describeClass(cb *classBase, p *corev1.Pod) error {
	vol, drivers, err := sv.volumeRequirements(p)
	if err != nil {
		return err
	}
	cb.volDrivers = drivers
	if err := sv.classDevices(cb, p); err != nil {
		return err
	}
	cb.hostPorts = podHostPorts(p)
	// Required node affinity terms crossed with the volumes' alternatives,
	// pod terms first.
	for _, v := range vol {
		alts, err := podRequirementAlternatives(p, v)
		if err != nil {
			return err
		}
		cb.terms = append(cb.terms, alts...)
	}
	if len(vol) > 1 {
		var ordered []reqBuilder
		n := len(cb.terms) / len(vol)
		for i := 0; i < n; i++ {
			for j := range vol {
				ordered = append(ordered, cb.terms[j*n+i])
			}
		}
		cb.terms = ordered
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		pref := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		sort.SliceStable(pref, func(i, j int) bool { return pref[i].Weight > pref[j].Weight })
		for _, t := range pref {
			b := reqBuilder{}
			if err := addTerm(b, t.Preference.MatchExpressions); err != nil {
				return err
			}
			cb.prefNode = append(cb.prefNode, b)
		}
	}
	if err := sv.classGroups(cb, p); err != nil {
		return err
	}
	// Tiers, placed in order: 0 pods that need a node of their own
	// (hostname anti-affinity matching themselves), 1 other hostname-keyed
	// terms, 2 pods pinned to zones by their requirements (so zone
	// spreading around them sees them), 3 zone-keyed (or other-label)
	// terms, 4 the rest.
	cb.tier = 4
	for _, g := range cb.required {
		t := 3
		if g.key == corev1.LabelHostname {
			t = 1
			if g.kind == kindAnti && g.selects(cb.ns, cb.labels) {
				t = 0
			}
		}
		cb.tier = min(cb.tier, t)
	}
	if cb.tier == 4 {
		for _, t := range cb.terms {
			if _, ok := t[corev1.LabelTopologyZone]; ok {
				cb.tier = 2
			}
		}
	}
	// A CapacityBuffer's virtual pods have the lowest priority: they are
	// placed after every real pod, in the same tiers among themselves, so
	// they take only the room real pods leave and never the reverse.
	if pods.IsVirtual(p) {
		cb.tier += virtualTiers
	}
	return nil
}

// virtualTiers shifts virtual pods' tiers past every real pod's (0-4).
const virtualTiers = 5

// variant returns the class's relaxation step i, building it on demand;
// nil when nothing is left to relax.
func (sv *solver) variant(cb *classBase, i int) *podClass {
	for len(cb.variants) <= i {
		var st relaxState
		if n := len(cb.variants); n > 0 {
			var ok bool
			st, ok = sv.nextRelax(cb, cb.variants[n-1].relax)
			if !ok {
				return nil
			}
		} else if sv.opts.IgnorePreferences {
			st = relaxState{prefNode: len(cb.prefNode), prefAff: len(cb.prefAff), prefAnti: len(cb.prefAnti), anyway: len(cb.anyway)}
		}
		cb.variants = append(cb.variants, sv.buildVariant(cb, len(cb.variants), st))
	}
	return cb.variants[i]
}

// nextRelax follows Karpenter's relaxation order: drop the first of several
// required node affinity terms, then the heaviest preferred pod affinity,
// pod anti-affinity and node affinity terms, then ScheduleAnyway spread, and
// finally tolerate PreferNoSchedule taints.
func (sv *solver) nextRelax(cb *classBase, st relaxState) (relaxState, bool) {
	switch {
	case st.term < len(cb.terms)-1:
		st.term++
	case sv.opts.RequirePreferences:
		return st, false
	case st.prefAff < len(cb.prefAff):
		st.prefAff++
	case st.prefAnti < len(cb.prefAnti):
		st.prefAnti++
	case st.prefNode < len(cb.prefNode):
		st.prefNode++
	case st.anyway < len(cb.anyway):
		st.anyway++
	case !st.tolPNS && sv.hasPreferNoSchedule:
		st.tolPNS = true
	default:
		return st, false
	}
	return st, true
}

func (sv *solver) buildVariant(cb *classBase, level int, st relaxState) *podClass {
	c := &podClass{base: cb, level: level, relax: st, tolPNS: st.tolPNS}
	b := reqBuilder{}
	for k, v := range cb.terms[st.term] {
		b[k] = v
	}
	if st.prefNode < len(cb.prefNode) {
		for k, v := range cb.prefNode[st.prefNode] {
			b.add(k, v)
		}
	}
	c.zones, c.cts = sv.allZones, sv.allCTs
	if z, ok := b[corev1.LabelTopologyZone]; ok {
		c.zones = sv.zoneMask(z)
		c.zoneCon = &z
		delete(b, corev1.LabelTopologyZone)
	}
	if ct, ok := b[v1.LabelCapacityType]; ok {
		c.cts = sv.ctMask(ct)
		c.ctCon = &ct
		delete(b, v1.LabelCapacityType)
	}
	c.reqs = sv.intern(b.build())
	c.own = append(c.own, cb.required...)
	c.own = append(c.own, cb.prefAff[st.prefAff:]...)
	c.own = append(c.own, cb.prefAnti[st.prefAnti:]...)
	c.own = append(c.own, cb.anyway[st.anyway:]...)
	for _, g := range c.own {
		c.ownSelf = append(c.ownSelf, g.selects(cb.ns, cb.labels))
	}
	c.poolOK = make([]int8, len(sv.pools))
	c.poolTypes = make([]bitset, len(sv.pools))
	c.exOK = sv.existingVerdicts(cb.key, level)
	for i := range c.cursors {
		c.cursors[i] = make([]int, 1+len(sv.zones))
	}
	return c
}

// tolerations in force for the variant.
func (c *podClass) tolerates(taints []corev1.Taint) (corev1.Taint, bool) {
	t, bad := untolerated(taints, c.base.tols, c.tolPNS)
	return t, !bad
}
