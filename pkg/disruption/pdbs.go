package disruption

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// pdbIndex answers "may this pod be evicted now" from the
// PodDisruptionBudgets' selectors and status.disruptionsAllowed, as the
// eviction API would.
type pdbIndex struct {
	byNamespace map[string][]pdbEntry
}

type pdbEntry struct {
	key      string
	selector labels.Selector
	allowed  int32
}

func newPDBIndex(pdbs []*policyv1.PodDisruptionBudget) *pdbIndex {
	idx := &pdbIndex{byNamespace: map[string][]pdbEntry{}}
	for _, pdb := range pdbs {
		// A nil selector selects nothing; an empty one selects every pod
		// of the namespace (policy/v1 semantics).
		if pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			// The API server rejects such selectors; a PDB we cannot read
			// must not let evictions through, so it selects everything.
			sel = labels.Everything()
		}
		idx.byNamespace[pdb.Namespace] = append(idx.byNamespace[pdb.Namespace], pdbEntry{
			key:      pdb.Namespace + "/" + pdb.Name,
			selector: sel,
			allowed:  pdb.Status.DisruptionsAllowed,
		})
	}
	return idx
}

// blocking returns the PDBs that stop p's eviction: the one selecting it
// with no disruptions allowed, or every PDB selecting it when there are
// several (the eviction API refuses those pods outright).
func (idx *pdbIndex) blocking(p *corev1.Pod) []string {
	var matched []pdbEntry
	for _, e := range idx.byNamespace[p.Namespace] {
		if e.selector.Matches(labels.Set(p.Labels)) {
			matched = append(matched, e)
		}
	}
	switch {
	case len(matched) == 1 && matched[0].allowed <= 0:
		return []string{matched[0].key}
	case len(matched) > 1:
		keys := make([]string, len(matched))
		for i, e := range matched {
			keys[i] = e.key
		}
		sort.Strings(keys)
		return keys
	}
	return nil
}
