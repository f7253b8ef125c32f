package scheduling_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	podclass "github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// planNode is the checker's view of one node in the final state: what its
// labels may be, which pods it holds and how it may be tainted.
type planNode struct {
	name     string
	possible func(key string) ([]string, bool) // every value the label may take; false when it may be absent
	taints   []corev1.Taint
	pods     []*corev1.Pod
}

// checkPlan verifies a plan against the snapshot independently of the
// solver's code: every pod accounted for once, no overcommit, taints
// tolerated, node selection honoured for every value a node may end up
// with, spread within maxSkew, (anti-)affinity honoured, limits respected
// and prices consistent.
func checkPlan(t testing.TB, s *scheduling.Snapshot, plan *scheduling.Plan) {
	t.Helper()
	for _, err := range planViolations(s, plan) {
		t.Error(err)
	}
}

func planViolations(s *scheduling.Snapshot, plan *scheduling.Plan) []error {
	var errs []error
	fail := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	seen := map[*corev1.Pod]int{}
	var nodes []*planNode
	pools := map[string]*scheduling.NodePool{}
	for _, np := range s.NodePools {
		pools[np.Name] = np
	}
	exByName := map[string]*scheduling.ExistingNode{}
	for _, n := range s.Nodes {
		exByName[n.Name] = n
		pn := &planNode{name: "existing/" + n.Name, taints: n.Taints, pods: append([]*corev1.Pod(nil), n.Pods...)}
		lbls := n.Labels
		pn.possible = func(key string) ([]string, bool) {
			v, ok := lbls[key]
			if !ok {
				return nil, false
			}
			return []string{v}, true
		}
		if !n.Initialized {
			pn.taints = nil
			for _, tt := range n.Taints {
				startup := false
				for _, st := range n.StartupTaints {
					startup = startup || st.Key == tt.Key
				}
				if !startup && tt.Key != corev1.TaintNodeNotReady && tt.Key != "karpenter.sh/unregistered" && tt.Key != corev1.TaintNodeUnreachable {
					pn.taints = append(pn.taints, tt)
				}
			}
		}
		nodes = append(nodes, pn)
	}
	byName := map[string]*planNode{}
	for _, pn := range nodes {
		byName[pn.name] = pn
	}
	for _, e := range plan.Existing {
		pn := byName["existing/"+e.Node]
		if pn == nil {
			fail("placement on unknown node %s", e.Node)
			continue
		}
		en := exByName[e.Node]
		if en.MarkedForDeletion {
			fail("pods placed on node %s marked for deletion", e.Node)
		}
		for _, p := range e.Pods {
			seen[p]++
		}
		pn.pods = append(pn.pods, e.Pods...)
		used := sumRequests(pn.pods)
		for name, a := range en.Allocatable {
			if u, ok := used[name]; ok && u.Cmp(a) > 0 {
				fail("node %s overcommitted on %s: %s > %s", e.Node, name, u.String(), a.String())
			}
		}
	}
	limitUse := map[string]corev1.ResourceList{}
	for i, nc := range plan.NewNodeClaims {
		np := pools[nc.NodePool]
		if np == nil {
			fail("new node %d: unknown nodepool %s", i, nc.NodePool)
			continue
		}
		if len(nc.InstanceTypes) == 0 {
			fail("new node %d: no instance types", i)
			continue
		}
		for _, p := range nc.Pods {
			seen[p]++
		}
		reqs := map[string]scheduling.Requirement{}
		for _, r := range nc.Requirements {
			if r.Operator == corev1.NodeSelectorOpIn {
				reqs[r.Key] = r
			}
		}
		for _, k := range []string{corev1.LabelTopologyZone, "karpenter.sh/capacity-type", corev1.LabelInstanceTypeStable} {
			if _, ok := reqs[k]; !ok {
				fail("new node %d: no In requirement on %s", i, k)
			}
		}
		its := nc.InstanceTypes
		npLabels := np.Labels
		pn := &planNode{name: fmt.Sprintf("new/%d", i), taints: np.Taints, pods: nc.Pods}
		pn.possible = func(key string) ([]string, bool) {
			if r, ok := reqs[key]; ok {
				return r.Values, true
			}
			if key == "karpenter.sh/nodepool" {
				return []string{np.Name}, true
			}
			if v, ok := npLabels[key]; ok {
				return []string{v}, true
			}
			var vals []string
			defined, absent := false, false
			for _, it := range its {
				vs, ok := it.Requirements[key]
				if !ok || len(vs) == 0 {
					absent = true
					continue
				}
				defined = true
				vals = append(vals, vs...)
			}
			if !defined || absent {
				return vals, false
			}
			return vals, true
		}
		nodes = append(nodes, pn)
		used := sumRequests(nc.Pods)
		maxCap := corev1.ResourceList{}
		for _, it := range its {
			alloc := it.Allocatable()
			for name, u := range used {
				a := alloc[name]
				if u.Cmp(a) > 0 {
					fail("new node %d: pods need %s %s, option %s has %s", i, name, u.String(), it.Name, a.String())
				}
			}
			for name, q := range it.Capacity {
				if m, ok := maxCap[name]; !ok || q.Cmp(m) > 0 {
					maxCap[name] = q
				}
			}
		}
		lu := limitUse[np.Name]
		if lu == nil {
			lu = corev1.ResourceList{}
			for k, v := range np.InUse {
				lu[k] = v.DeepCopy()
			}
			limitUse[np.Name] = lu
		}
		for name, q := range maxCap {
			x := lu[name]
			x.Add(q)
			lu[name] = x
		}
		if price, ok := lowerbound.NodeCost(nc, plan.ListPrices); !ok || math.Abs(price-nc.Price) > 1e-9 {
			fail("new node %d: price %v but cheapest allowed offering %v", i, nc.Price, price)
		}
	}
	for name, lu := range limitUse {
		for r, l := range pools[name].Limits {
			if u, ok := lu[r]; ok && u.Cmp(l) > 0 {
				fail("nodepool %s: %s would reach %s, over its limit %s", name, r, u.String(), l.String())
			}
		}
	}
	for _, pe := range plan.Unschedulable {
		seen[pe.Pod]++
		if len(pe.NodePools) == 0 && pe.Existing == nil {
			fail("pod %s unschedulable without reasons", pe.Pod.Name)
		}
	}
	for _, p := range s.Pods {
		want := 1
		if podclass.IsOwnedByDaemonSet(p) {
			want = 0
		}
		if seen[p] != want {
			fail("pod %s/%s appears %d times in the plan, want %d", p.Namespace, p.Name, seen[p], want)
		}
	}
	// Per-pod checks on every node.
	memo := countMemo{}
	pending := map[*corev1.Pod]bool{}
	for _, p := range s.Pods {
		pending[p] = true
	}
	for _, n := range nodes {
		for _, p := range n.pods {
			if !pending[p] {
				continue
			}
			for _, tt := range n.taints {
				if tt.Effect == corev1.TaintEffectPreferNoSchedule || tt.Key == "karpenter.sh/unregistered" {
					continue
				}
				if !schedcorev1.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &tt, false) {
					fail("pod %s on %s does not tolerate %v", p.Name, n.name, tt)
				}
			}
			if !nodeSelectionHolds(p, n) {
				fail("pod %s on %s: node selection does not hold for every value the node may take", p.Name, n.name)
			}
			for _, err := range topologyViolations(s, p, n, nodes, memo) {
				fail("pod %s on %s: %v", p.Name, n.name, err)
			}
		}
	}
	return errs
}

func sumRequests(ps []*corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range ps {
		for name, q := range podclass.Requests(p) {
			x := out[name]
			x.Add(q)
			out[name] = x
		}
	}
	out[corev1.ResourcePods] = *resource.NewQuantity(int64(len(ps)), resource.DecimalSI)
	return out
}

// nodeSelectionHolds: nodeSelector and one required node affinity term hold
// for every label value the node may end up with.
func nodeSelectionHolds(p *corev1.Pod, n *planNode) bool {
	for k, v := range p.Spec.NodeSelector {
		vals, present := n.possible(k)
		if !present {
			return false
		}
		for _, x := range vals {
			if x != v {
				return false
			}
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			if !exprHolds(e, n) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func exprHolds(e corev1.NodeSelectorRequirement, n *planNode) bool {
	vals, present := n.possible(e.Key)
	in := func(v string) bool {
		for _, x := range e.Values {
			if x == v {
				return true
			}
		}
		return false
	}
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		if !present {
			return false
		}
		for _, v := range vals {
			if !in(v) {
				return false
			}
		}
	case corev1.NodeSelectorOpNotIn:
		for _, v := range vals {
			if in(v) {
				return false
			}
		}
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present && len(vals) == 0
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present {
			return false
		}
		bound, _ := strconv.ParseInt(e.Values[0], 10, 64)
		for _, v := range vals {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil || (e.Operator == corev1.NodeSelectorOpGt && x <= bound) || (e.Operator == corev1.NodeSelectorOpLt && x >= bound) {
				return false
			}
		}
	}
	return true
}

// domainOf is the node's single value for key (hostname: the node itself).
func domainOf(n *planNode, key string) (string, bool) {
	if key == corev1.LabelHostname {
		return n.name, true
	}
	vals, present := n.possible(key)
	if !present || len(vals) != 1 {
		return "", false
	}
	return vals[0], true
}

// countMemo caches domain counts per (key, selector, namespaces).
type countMemo map[string]map[string]int

func topologyViolations(s *scheduling.Snapshot, p *corev1.Pod, n *planNode, nodes []*planNode, memo countMemo) []error {
	var errs []error
	count := func(key string, sel labels.Selector, nsOK func(string) bool, nsKey string) map[string]int {
		mk := key + "|" + sel.String() + "|" + nsKey
		if c, ok := memo[mk]; ok {
			return c
		}
		c := map[string]int{}
		memo[mk] = c
		for _, m := range nodes {
			d, ok := domainOf(m, key)
			if !ok {
				continue
			}
			for _, q := range m.pods {
				if nsOK(q.Namespace) && sel.Matches(labels.Set(q.Labels)) {
					c[d]++
				}
			}
		}
		return c
	}
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		d, ok := domainOf(n, tsc.TopologyKey)
		if !ok {
			errs = append(errs, fmt.Errorf("spread on %s but the node's domain is undecided", tsc.TopologyKey))
			continue
		}
		sel, _ := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		for _, k := range tsc.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, "=", []string{v})
				sel = sel.Add(*r)
			}
		}
		c := count(tsc.TopologyKey, sel, func(ns string) bool { return ns == p.Namespace }, p.Namespace)
		minCount := 0
		if tsc.TopologyKey != corev1.LabelHostname {
			honorAffinity := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
			honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
			universe := map[string]bool{}
			for _, np := range s.NodePools {
				// kube-scheduler counts only the domains of nodes the pod
				// could use under the two policies.
				if honorAffinity && !podAllowsPool(p, np) {
					continue
				}
				if honorTaints && !toleratesAll(p, np.Taints) {
					continue
				}
				for _, it := range s.InstanceTypes[np.Name] {
					for _, o := range it.Offerings {
						if !o.Available {
							continue
						}
						if tsc.TopologyKey == corev1.LabelTopologyZone && poolAdmits(np, corev1.LabelTopologyZone, o.Zone) {
							universe[o.Zone] = true
						}
						if tsc.TopologyKey == "karpenter.sh/capacity-type" && poolAdmits(np, "karpenter.sh/capacity-type", o.CapacityType) {
							universe[o.CapacityType] = true
						}
					}
					if tsc.TopologyKey != corev1.LabelTopologyZone && tsc.TopologyKey != "karpenter.sh/capacity-type" {
						for _, v := range it.Requirements[tsc.TopologyKey] {
							universe[v] = true
						}
					}
				}
				for _, r := range np.Requirements {
					if r.Key == tsc.TopologyKey && r.Operator == corev1.NodeSelectorOpIn && tsc.TopologyKey != corev1.LabelTopologyZone && tsc.TopologyKey != "karpenter.sh/capacity-type" {
						for _, v := range r.Values {
							universe[v] = true
						}
					}
				}
			}
			if honorAffinity {
				for z := range universe {
					if !podAllowsZone(p, z) {
						delete(universe, z)
					}
				}
			}
			minCount = -1
			for z := range universe {
				if minCount < 0 || c[z] < minCount {
					minCount = c[z]
				}
			}
			minCount = max(minCount, 0)
		}
		if c[d]-minCount > int(tsc.MaxSkew) {
			errs = append(errs, fmt.Errorf("spread on %s: domain %s has %d, min %d, maxSkew %d", tsc.TopologyKey, d, c[d], minCount, tsc.MaxSkew))
		}
	}
	a := p.Spec.Affinity
	if a == nil {
		return errs
	}
	check := func(term corev1.PodAffinityTerm, anti bool) {
		d, ok := domainOf(n, term.TopologyKey)
		if !ok {
			errs = append(errs, fmt.Errorf("pod (anti-)affinity on %s but the node's domain is undecided", term.TopologyKey))
			return
		}
		sel, _ := metav1.LabelSelectorAsSelector(term.LabelSelector)
		nss := map[string]bool{}
		for _, ns := range term.Namespaces {
			nss[ns] = true
		}
		if len(nss) == 0 && term.NamespaceSelector == nil {
			nss[p.Namespace] = true
		}
		// A namespaceSelector adds the snapshot's namespaces it matches (with
		// their kubernetes.io/metadata.name label); every namespace when it
		// is empty or the snapshot does not list namespaces.
		all := false
		if term.NamespaceSelector != nil {
			nsSel, _ := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
			all = nsSel.Empty() || s.Namespaces == nil
			for _, ns := range s.Namespaces {
				l := labels.Set{corev1.LabelMetadataName: ns.Name}
				for k, v := range ns.Labels {
					l[k] = v
				}
				if nsSel.Matches(l) {
					nss[ns.Name] = true
				}
			}
		}
		nsOK := func(ns string) bool { return all || nss[ns] }
		nsKey := fmt.Sprint(all, term.NamespaceSelector, term.Namespaces, p.Namespace)
		c := count(term.TopologyKey, sel, nsOK, nsKey)
		self := 0
		if nsOK(p.Namespace) && sel.Matches(labels.Set(p.Labels)) {
			self = 1
		}
		others := c[d] - self
		if anti && others > 0 {
			errs = append(errs, fmt.Errorf("anti-affinity on %s: %d matching pods share domain %s", term.TopologyKey, others, d))
		}
		if !anti && others == 0 {
			// A pod that matches its own term may have been the first of
			// its group, placed before any match existed; then every other
			// pod carrying the same term must share its domain.
			ok := false
			if self == 1 {
				ok = true
				sig := "owners|" + term.TopologyKey + "|" + sel.String() + "|" + nsKey
				owners, seen := memo[sig]
				if !seen {
					owners = map[string]int{}
					for _, m := range nodes {
						md, _ := domainOf(m, term.TopologyKey)
						for _, q := range m.pods {
							if q.Spec.Affinity == nil || q.Spec.Affinity.PodAffinity == nil {
								continue
							}
							for _, qt := range q.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
								qs, _ := metav1.LabelSelectorAsSelector(qt.LabelSelector)
								if qt.TopologyKey == term.TopologyKey && qs.String() == sel.String() {
									owners[md]++
								}
							}
						}
					}
					memo[sig] = owners
				}
				for od := range owners {
					if od != d {
						ok = false
					}
				}
			}
			if !ok {
				errs = append(errs, fmt.Errorf("affinity on %s: no matching pod in domain %s", term.TopologyKey, d))
			}
		}
	}
	if a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			check(term, true)
		}
	}
	if a.PodAffinity != nil {
		for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			check(term, false)
		}
	}
	return errs
}

// podAllowsZone reports whether the pod's node selection admits zone z.
func podAllowsZone(p *corev1.Pod, z string) bool {
	if v, ok := p.Spec.NodeSelector[corev1.LabelTopologyZone]; ok && v != z {
		return false
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			if e.Key != corev1.LabelTopologyZone {
				continue
			}
			in := false
			for _, v := range e.Values {
				in = in || v == z
			}
			if (e.Operator == corev1.NodeSelectorOpIn && !in) || (e.Operator == corev1.NodeSelectorOpNotIn && in) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// poolAdmits reports whether np's In requirements on key (if any) admit v.
func poolAdmits(np *scheduling.NodePool, key, v string) bool {
	for _, r := range np.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && !slices.Contains(r.Values, v) {
			return false
		}
	}
	return true
}

// podAllowsPool reports whether the pod's node selector and required node
// affinity (In expressions) admit the pool's name label and In
// requirements: a node of the pool could match the pod.
func podAllowsPool(p *corev1.Pod, np *scheduling.NodePool) bool {
	admits := func(key, v string) bool {
		if key == "karpenter.sh/nodepool" {
			return v == np.Name
		}
		return poolAdmits(np, key, v)
	}
	for k, v := range p.Spec.NodeSelector {
		if !admits(k, v) {
			return false
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			if e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			hit := false
			for _, v := range e.Values {
				hit = hit || admits(e.Key, v)
			}
			ok = ok && hit
		}
		if ok {
			return true
		}
	}
	return false
}

// toleratesAll reports whether the pod tolerates every NoSchedule and
// NoExecute taint.
func toleratesAll(p *corev1.Pod, taints []corev1.Taint) bool {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range p.Spec.Tolerations {
			ok = ok || p.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, true)
		}
		if !ok {
			return false
		}
	}
	return true
}
