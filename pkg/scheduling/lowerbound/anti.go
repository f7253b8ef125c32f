package lowerbound

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// distinctNodes is the size of the largest group of pending pods that must
// sit on pairwise distinct nodes: pods sharing one required pod
// anti-affinity term on the hostname key whose selector matches each of
// them. (Any two such pods repel each other, so the group needs as many
// nodes as it has pods.) Terms whose namespaces cannot be evaluated without
// Namespace objects (a non-empty namespaceSelector) are skipped, which only
// loosens the bound.
func distinctNodes(pending []*corev1.Pod) int {
	counts := map[int]int{}
	most := 0
	forEachAntiGroupMember(pending, func(_ *corev1.Pod, group int) {
		counts[group]++
		most = max(most, counts[group])
	})
	return most
}

// forEachAntiGroupMember calls f for every pending pod (DaemonSet-owned
// ones left out) and every group it belongs to, groups numbered from 0 in
// the order they are first seen. A group is one required hostname
// anti-affinity term (selector and namespaces); its members are the pods
// that carry the term and match it, so any two of them repel each other.
func forEachAntiGroupMember(pending []*corev1.Pod, f func(p *corev1.Pod, group int)) {
	type group struct {
		id         int
		selector   labels.Selector
		namespaces []string // nil means every namespace
	}
	groups := map[string]*group{}
	for _, p := range pending {
		if pods.IsOwnedByDaemonSet(p) || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		seen := map[string]bool{} // a pod counts once per group
		for _, term := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey != corev1.LabelHostname {
				continue
			}
			namespaces, ok := termNamespaces(p, &term)
			if !ok {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil || term.LabelSelector == nil {
				continue
			}
			key := sel.String() + "|" + strings.Join(namespaces, ",")
			if namespaces == nil {
				key += "*"
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			g, ok := groups[key]
			if !ok {
				g = &group{id: len(groups), selector: sel, namespaces: namespaces}
				groups[key] = g
			}
			if (g.namespaces == nil || slices.Contains(g.namespaces, p.Namespace)) && g.selector.Matches(labels.Set(p.Labels)) {
				f(p, g.id)
			}
		}
	}
}

// termNamespaces is the sorted set of namespaces an affinity term applies
// to (nil for all), and false when that depends on Namespace labels.
func termNamespaces(p *corev1.Pod, term *corev1.PodAffinityTerm) ([]string, bool) {
	if sel := term.NamespaceSelector; sel != nil {
		if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
			return nil, true // {} selects every namespace
		}
		return nil, false
	}
	if len(term.Namespaces) == 0 {
		return []string{p.Namespace}, true
	}
	ns := slices.Clone(term.Namespaces)
	slices.Sort(ns)
	return slices.Compact(ns), true
}
