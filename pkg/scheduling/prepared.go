package scheduling

import (
	"hash/maphash"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// Prepared solves a series of snapshots that share their pods and their
// fixed parts (NodePools, instance types, DaemonSets, namespaces, volumes,
// the default spread, the time) and differ in which nodes remain and which
// pods are pending: the simulations of one consolidation decision, which
// each remove a few candidates and re-place their pods. Setting up a solve
// reads every bound pod's requests, labels and anti-affinity terms, and
// every instance type's resources; none of that changes between those
// snapshots, so Prepared reads each pod and each instance type once and
// every later solve looks the answers up. Within one Solve, whose two pod
// orders each build the solver's state from the same snapshot, the second
// also reuses the nodes' sums, the resource index and each class step's
// verdicts on the existing nodes. A Solve without a Prepared reads its
// bound pods through one of its own (usePrepared), so both take one path.
//
// It only caches what a solve would derive itself, keyed by the objects'
// identity (a pod, a NodePool's slice of instance types), and a solve
// whose resource dimensions differ from the first one's reads its pods
// afresh: the plans are exactly Solve's. Everything the snapshots point to
// must stay unchanged while the Prepared is in use (as Solve already asks
// for the duration of one call). A Prepared is not safe for concurrent
// use.
type Prepared struct {
	// ri is the first solve's resource index: cached request vectors are
	// in its dimensions, and a later solve whose dimensions are the same
	// shares it.
	ri   *resourceIndex
	pods map[*corev1.Pod]*podFacts
	seed maphash.Seed
	// labelSets numbers the distinct (namespace, labels) of the pods
	// seen, by an order-free hash confirmed by comparing the labels:
	// pods of one set are selected by the same topology groups.
	labelSets   map[uint64][]labelSet
	nLabelSets  int
	antiTerms   map[antiBucket][]antiTerm
	nAntiTerms  int
	typeNames   map[string]typeNames
	scratchSeen map[corev1.ResourceName]bool
	// slab holds the facts of pods not seen yet: one allocation per
	// thousand pods, not one each (expect: how many pods the first
	// solve has, so a small one does not take a thousand).
	slab   []podFacts
	expect int
	// nodes are the facts of the nodes of the snapshot Solve is solving
	// (Prepared.Solve clears them), read again by its second pod order.
	nodes map[*ExistingNode]*nodeFacts
	// types are the instance types' facts (solver.typeFacts), in the
	// dimensions of typesRI.
	types   map[*InstanceType]typeFacts
	typesRI *resourceIndex
	// exOK are, for the snapshot Solve is solving, each class variant's
	// verdicts on the existing nodes (solver.existingVerdicts), by class
	// key and relaxation level.
	exOK map[variantKey][]int8
	// solving is the snapshot Prepared.Solve is solving, and solvingRI
	// its index once read (its second pod order reads the same).
	solving   *Snapshot
	solvingRI *resourceIndex
	// local: the Prepared of one solve that Prepared.Solve did not start
	// (usePrepared).
	local bool
}

// podFacts are what a solve reads of one pod that no snapshot changes.
type podFacts struct {
	// vec is the pod's requests in Prepared.ri's dimensions.
	vec resVec
	// names are the resource names the pod's request lists mention
	// beyond cpu, memory and pods (read when it is pending, named).
	names    []corev1.ResourceName
	named    bool
	terminal bool
	// claims: the pod mounts a persistent volume claim.
	claims bool
	ports  []hostPort
	// labelSet is the pod's (namespace, labels) number.
	labelSet int32
	// anti are the ids of the pod's required anti-affinity terms, in
	// order: -1 for a term that reads the pod's labels or namespace
	// labels (matchLabelKeys, mismatchLabelKeys, namespaceSelector), which
	// is turned into its group on its own.
	anti []int32
	// key is the pod's class key (classKey), for keySpread.
	key       string
	keySpread *DefaultSpread
	keyed     bool
}

// nodeFacts are what an existing node brings to a solve
// (solver.existingFacts).
type nodeFacts struct {
	alloc, requests resVec
	taints          []corev1.Taint
	ports           []hostPort
	// claims: some bound pod mounts a persistent volume claim.
	claims bool
}

// typeFacts are what a solve reads of an instance type whatever the
// NodePool (solver.typeFacts).
type typeFacts struct {
	reqs            map[string][]string
	capacity, alloc resVec
}

// variantKey names a class's relaxation step: the same in both pod
// orders of one Solve.
type variantKey struct {
	class string
	level int
}

type labelSet struct {
	ns     string
	labels map[string]string
	id     int32
}

// antiBucket narrows the search for an equal anti-affinity term: a
// namespace of many workloads does not compare every term with all.
type antiBucket struct {
	namespace, topologyKey string
	matchLabels            uint64
}

type antiTerm struct {
	term corev1.PodAffinityTerm
	id   int32
}

// typeNames are the resource names a NodePool's instance types mention,
// for the slice they were read from.
type typeNames struct {
	first *InstanceType
	n     int
	names []corev1.ResourceName
}

// NewPrepared returns an empty Prepared; it learns from the solves it
// runs.
func NewPrepared() *Prepared {
	return &Prepared{
		pods:        map[*corev1.Pod]*podFacts{},
		seed:        maphash.MakeSeed(),
		labelSets:   map[uint64][]labelSet{},
		antiTerms:   map[antiBucket][]antiTerm{},
		nodes:       map[*ExistingNode]*nodeFacts{},
		types:       map[*InstanceType]typeFacts{},
		exOK:        map[variantKey][]int8{},
		typeNames:   map[string]typeNames{},
		scratchSeen: map[corev1.ResourceName]bool{},
	}
}

// Solve is Solve(s, opts), reusing what earlier solves of pr read. With
// dynamic resources planned (opts.PlanDynamicResources) a pod's requests
// depend on its claims' devices: those solves read everything afresh.
func (pr *Prepared) Solve(s *Snapshot, opts Options) (*Plan, error) {
	clear(pr.nodes)
	clear(pr.exOK)
	pr.solving, pr.solvingRI = s, nil
	if !opts.PlanDynamicResources {
		opts.prepared = pr
		if len(pr.pods) == 0 {
			pr.expect = len(s.Pods) + boundPods(s)
			pr.pods = make(map[*corev1.Pod]*podFacts, pr.expect)
		}
	}
	return Solve(s, opts)
}

// facts are p's facts, read on first sight.
func (pr *Prepared) facts(p *corev1.Pod) *podFacts {
	if f, ok := pr.pods[p]; ok {
		return f
	}
	if len(pr.slab) == 0 {
		pr.slab = make([]podFacts, min(max(pr.expect-len(pr.pods), 16), 1024))
	}
	f := &pr.slab[0]
	pr.slab = pr.slab[1:]
	f.terminal = pods.IsTerminal(p)
	f.ports = podHostPorts(p)
	f.claims = slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil })
	f.labelSet = pr.labelSetOf(p)
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			f.anti = append(f.anti, pr.antiTermOf(p.Namespace, t))
		}
	}
	pr.pods[p] = f
	return f
}

// resourceNames are the resource names p's request lists mention beyond
// cpu, memory and pods, read once.
func (pr *Prepared) resourceNames(p *corev1.Pod) []corev1.ResourceName {
	f := pr.facts(p)
	if !f.named {
		clear(pr.scratchSeen)
		addNames(pr.scratchSeen, &f.names, appendRequestLists(nil, p))
		f.named = true
	}
	return f.names
}

// labelSetOf numbers p's namespace and labels.
func (pr *Prepared) labelSetOf(p *corev1.Pod) int32 {
	key := maphash.String(pr.seed, p.Namespace) + LabelsHash(pr.seed, p.Labels)
	for _, s := range pr.labelSets[key] {
		if s.ns == p.Namespace && maps.Equal(s.labels, p.Labels) {
			return s.id
		}
	}
	id := int32(pr.nLabelSets)
	pr.nLabelSets++
	pr.labelSets[key] = append(pr.labelSets[key], labelSet{ns: p.Namespace, labels: p.Labels, id: id})
	return id
}

// antiTermOf numbers a required anti-affinity term of a pod of namespace
// ns: equal terms (sameTerm) of one namespace select the same pods, so a
// solve turns each number into its group once (buildExistingGroups).
func (pr *Prepared) antiTermOf(ns string, t corev1.PodAffinityTerm) int32 {
	if len(t.MatchLabelKeys) > 0 || len(t.MismatchLabelKeys) > 0 || t.NamespaceSelector != nil {
		return -1
	}
	b := antiBucket{namespace: ns, topologyKey: t.TopologyKey}
	if t.LabelSelector != nil {
		b.matchLabels = LabelsHash(pr.seed, t.LabelSelector.MatchLabels)
	}
	for _, s := range pr.antiTerms[b] {
		if sameTerm(s.term, t) {
			return s.id
		}
	}
	id := int32(pr.nAntiTerms)
	pr.nAntiTerms++
	pr.antiTerms[b] = append(pr.antiTerms[b], antiTerm{term: t, id: id})
	return id
}

// indexResources interns every resource name the snapshot mentions:
// instance types' capacity, nodes' allocatable, NodePools' limits, and
// every resource a pending or daemon pod asks for, so one no instance type
// offers makes the pod unplaceable instead of being ignored (and, when
// dynamic resources are planned, the devices' dimensions).
func (sv *solver) indexResources() *resourceIndex {
	s := sv.snap
	if pr := sv.opts.prepared; pr != nil {
		return pr.resourceIndex(s)
	}
	var lists []corev1.ResourceList
	for _, its := range s.InstanceTypes {
		for _, it := range its {
			lists = append(lists, it.Capacity)
		}
	}
	for _, n := range s.Nodes {
		lists = append(lists, n.Allocatable)
	}
	for _, np := range s.NodePools {
		lists = append(lists, np.Limits)
	}
	for _, ps := range [][]*corev1.Pod{s.Pods, s.DaemonSets} {
		for _, p := range ps {
			lists = appendRequestLists(lists, p)
		}
	}
	if sv.opts.PlanDynamicResources {
		sv.deviceDims = map[corev1.ResourceName]bool{}
		for _, l := range s.deviceLists() {
			lists = append(lists, l)
			for n := range l {
				sv.deviceDims[n] = true
			}
		}
	}
	return newResourceIndex(lists)
}

// appendRequestLists appends to lists those whose resource names a
// pending pod adds to the solve's dimensions (its containers', init
// containers', overhead's and pod-level requests).
func appendRequestLists(lists []corev1.ResourceList, p *corev1.Pod) []corev1.ResourceList {
	for i := range p.Spec.Containers {
		lists = append(lists, p.Spec.Containers[i].Resources.Requests)
	}
	for i := range p.Spec.InitContainers {
		lists = append(lists, p.Spec.InitContainers[i].Resources.Requests)
	}
	lists = append(lists, p.Spec.Overhead)
	if p.Spec.Resources != nil {
		lists = append(lists, p.Spec.Resources.Requests)
	}
	return lists
}

// addNames appends to out the names of lists not in seen other than cpu,
// memory and pods (every index has those), marking them seen.
func addNames(seen map[corev1.ResourceName]bool, out *[]corev1.ResourceName, lists []corev1.ResourceList) {
	for _, l := range lists {
		for n := range l {
			if n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourcePods || seen[n] {
				continue
			}
			seen[n] = true
			*out = append(*out, n)
		}
	}
}

// resourceIndex is the index newResourceIndex would build for s: the
// instance types' names read once per NodePool, the pods' once per pod.
// It is pr.ri when the dimensions are the same, so the cached request
// vectors hold; pr.ri is set by the first solve.
func (pr *Prepared) resourceIndex(s *Snapshot) *resourceIndex {
	if s == pr.solving && pr.solvingRI != nil {
		return pr.solvingRI // Solve's second pod order
	}
	seen := map[corev1.ResourceName]bool{}
	var extra []corev1.ResourceName
	for name, its := range s.InstanceTypes {
		tn, ok := pr.typeNames[name]
		if !ok || len(its) == 0 || tn.first != its[0] || tn.n != len(its) {
			tn = typeNames{n: len(its)}
			if len(its) > 0 {
				tn.first = its[0]
			}
			own := map[corev1.ResourceName]bool{}
			for _, it := range its {
				addNames(own, &tn.names, []corev1.ResourceList{it.Capacity})
			}
			pr.typeNames[name] = tn
		}
		for _, n := range tn.names {
			if !seen[n] {
				seen[n] = true
				extra = append(extra, n)
			}
		}
	}
	for _, n := range s.Nodes {
		addNames(seen, &extra, []corev1.ResourceList{n.Allocatable})
	}
	for _, np := range s.NodePools {
		addNames(seen, &extra, []corev1.ResourceList{np.Limits})
	}
	for _, p := range s.DaemonSets {
		addNames(seen, &extra, appendRequestLists(nil, p))
	}
	for _, p := range s.Pods {
		for _, n := range pr.resourceNames(p) {
			if !seen[n] {
				seen[n] = true
				extra = append(extra, n)
			}
		}
	}
	slices.Sort(extra)
	ri := pr.ri
	if ri == nil || !slices.Equal(ri.names[resPods+1:], extra) {
		ri = newResourceIndex([]corev1.ResourceList{namesList(extra)})
	}
	if pr.ri == nil {
		pr.ri = ri
	}
	if s == pr.solving {
		pr.solvingRI = ri
	}
	return ri
}

// namesList is a list holding names, for newResourceIndex.
func namesList(names []corev1.ResourceName) corev1.ResourceList {
	l := make(corev1.ResourceList, len(names))
	for _, n := range names {
		l[n] = resource.Quantity{}
	}
	return l
}

// cachedPodVec is p's requests as the solve reads them (solver.podVec),
// from f (p's facts, nil when the solve is not prepared) when the solve
// shares the Prepared's dimensions.
func (sv *solver) cachedPodVec(p *corev1.Pod, f *podFacts) resVec {
	if f == nil || sv.ri != sv.opts.prepared.ri {
		return sv.podVec(p)
	}
	if f.vec == nil {
		f.vec = sv.podVec(p)
	}
	return f.vec
}

// usePrepared gives a solve that Prepared.Solve did not start a Prepared
// of its own (local), in its dimensions: the bound pods' facts are read
// one way whoever solves, and only the pending pods' are not kept (a
// provisioning solve reads each pending pod once).
func (sv *solver) usePrepared() {
	if sv.opts.prepared != nil {
		return
	}
	pr := NewPrepared()
	pr.ri, pr.local, pr.expect = sv.ri, true, boundPods(sv.snap)
	pr.pods = make(map[*corev1.Pod]*podFacts, pr.expect)
	sv.opts.prepared = pr
}

// existingVerdicts is where a class variant records whether it may ever
// land on each existing node (fitExisting's exOK: 0 unknown, 1 yes, -1
// no). The verdicts depend on the variant and the node alone, and both
// pod orders of one Solve build the same variants on the same nodes in
// the same order, so a Prepared's second pass reads the first one's.
func (sv *solver) existingVerdicts(class string, level int) []int8 {
	pr := sv.opts.prepared
	if pr.local || pr.solving != sv.snap {
		return make([]int8, len(sv.existing))
	}
	k := variantKey{class, level}
	if v, ok := pr.exOK[k]; ok && len(v) == len(sv.existing) {
		return v
	}
	v := make([]int8, len(sv.existing))
	pr.exOK[k] = v
	return v
}

// boundPods counts the pods bound to s's nodes.
func boundPods(s *Snapshot) int {
	n := 0
	for _, en := range s.Nodes {
		n += len(en.Pods)
	}
	return n
}

// pendingFacts are pending pod p's facts, nil when the solve's Prepared is
// its own.
func (sv *solver) pendingFacts(p *corev1.Pod) *podFacts {
	if pr := sv.opts.prepared; !pr.local {
		return pr.facts(p)
	}
	return nil
}
