package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// constraint is what one label key may be on a node: a set of values (or
// its complement), optional integer bounds, and whether the label may be
// absent altogether. It is the common currency of NodePool requirements,
// instance type labels and pod node selectors.
type constraint struct {
	absent bool     // the label may be missing
	comp   bool     // values are everything except vals
	vals   []string // sorted, unique
	hasGt  bool
	hasLt  bool
	gt, lt int64 // value must parse as an integer with gt < v < lt
}

func newConstraint(op corev1.NodeSelectorOperator, values []string) (constraint, error) {
	vals := sortedUnique(values)
	switch op {
	case corev1.NodeSelectorOpIn:
		return constraint{vals: vals}, nil
	case corev1.NodeSelectorOpNotIn:
		return constraint{absent: true, comp: true, vals: vals}, nil
	case corev1.NodeSelectorOpExists:
		return constraint{comp: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return constraint{absent: true}, nil
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		if len(values) != 1 {
			return constraint{}, fmt.Errorf("operator %s needs exactly one value, got %d", op, len(values))
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return constraint{}, fmt.Errorf("operator %s needs an integer value: %w", op, err)
		}
		c := constraint{comp: true}
		switch op {
		case corev1.NodeSelectorOpGt:
			c.hasGt, c.gt = true, n
		case OpGte:
			c.hasGt, c.gt = true, n-1
		case corev1.NodeSelectorOpLt:
			c.hasLt, c.lt = true, n
		case OpLte:
			c.hasLt, c.lt = true, n+1
		}
		return c, nil
	}
	return constraint{}, fmt.Errorf("unsupported operator %q", op)
}

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := append([]string(nil), values...)
	sort.Strings(out)
	j := 0
	for i := range out {
		if i == 0 || out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}

func (c constraint) inBounds(v string) bool {
	if !c.hasGt && !c.hasLt {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (!c.hasGt || n > c.gt) && (!c.hasLt || n < c.lt)
}

// allows reports whether a node whose label has value v satisfies c.
func (c constraint) allows(v string) bool {
	if !c.inBounds(v) {
		return false
	}
	i := sort.SearchStrings(c.vals, v)
	found := i < len(c.vals) && c.vals[i] == v
	return found != c.comp
}

// hasValues reports whether some present value satisfies c.
func (c constraint) hasValues() bool {
	if !c.comp {
		return len(c.vals) > 0
	}
	if c.hasGt && c.hasLt {
		return c.lt-c.gt > 1 // ignores the rare case of every integer excluded
	}
	return true
}

// empty reports whether nothing (no value, not even absence) satisfies c.
func (c constraint) empty() bool { return !c.absent && !c.hasValues() }

// allowsAny reports whether a node offering any of vals (none meaning the
// label is absent) can satisfy c.
func (c constraint) allowsAny(vals []string) bool {
	if len(vals) == 0 {
		return c.absent
	}
	for _, v := range vals {
		if c.allows(v) {
			return true
		}
	}
	return false
}

func (c constraint) intersect(o constraint) constraint {
	r := constraint{absent: c.absent && o.absent}
	r.hasGt, r.gt = c.hasGt || o.hasGt, maxBound(c.hasGt, c.gt, o.hasGt, o.gt, true)
	r.hasLt, r.lt = c.hasLt || o.hasLt, maxBound(c.hasLt, c.lt, o.hasLt, o.lt, false)
	switch {
	case !c.comp && !o.comp:
		r.vals = intersectSorted(c.vals, o.vals)
	case c.comp && o.comp:
		r.comp = true
		r.vals = unionSorted(c.vals, o.vals)
	case c.comp:
		r.vals = minusSorted(o.vals, c.vals)
	default:
		r.vals = minusSorted(c.vals, o.vals)
	}
	if !r.comp && (r.hasGt || r.hasLt) {
		kept := r.vals[:0:0]
		for _, v := range r.vals {
			if r.inBounds(v) {
				kept = append(kept, v)
			}
		}
		r.vals = kept
		r.hasGt, r.hasLt = false, false
	}
	return r
}

func maxBound(ha bool, a int64, hb bool, b int64, greater bool) int64 {
	switch {
	case ha && hb:
		if greater {
			return max(a, b)
		}
		return min(a, b)
	case ha:
		return a
	case hb:
		return b
	}
	if greater {
		return math.MinInt64
	}
	return math.MaxInt64
}

// format renders c the way Karpenter prints requirements, e.g.
// "topology.kubernetes.io/zone In [us-east-1a us-east-1b]".
func (c constraint) format(key string) string {
	var b strings.Builder
	b.WriteString(key)
	switch {
	case !c.comp && len(c.vals) > 0:
		fmt.Fprintf(&b, " In [%s]", strings.Join(c.vals, " "))
	case !c.comp:
		b.WriteString(" DoesNotExist")
	case len(c.vals) > 0:
		fmt.Fprintf(&b, " NotIn [%s]", strings.Join(c.vals, " "))
	default:
		b.WriteString(" Exists")
	}
	if c.hasGt {
		fmt.Fprintf(&b, " >%d", c.gt)
	}
	if c.hasLt {
		fmt.Fprintf(&b, " <%d", c.lt)
	}
	return b.String()
}

func intersectSorted(a, b []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func minusSorted(a, b []string) []string {
	var out []string
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			continue
		}
		out = append(out, v)
	}
	return out
}

// reqSet is an immutable set of constraints keyed by label key, sorted by
// key. Interned by the solver so merges and compatibility checks are cached.
type reqSet struct {
	id   int
	keys []string
	cons []constraint
}

func (r *reqSet) get(key string) (constraint, bool) {
	i := sort.SearchStrings(r.keys, key)
	if i < len(r.keys) && r.keys[i] == key {
		return r.cons[i], true
	}
	return constraint{}, false
}

func (r *reqSet) signature() string {
	var b strings.Builder
	for i, k := range r.keys {
		b.WriteString(r.cons[i].format(k))
		if r.cons[i].absent {
			b.WriteString("?")
		}
		b.WriteByte(';')
	}
	return b.String()
}

// reqBuilder collects constraints by key, intersecting repeated keys.
type reqBuilder map[string]constraint

func (b reqBuilder) add(key string, c constraint) {
	if old, ok := b[key]; ok {
		c = old.intersect(c)
	}
	b[key] = c
}

func (b reqBuilder) addRequirement(key string, op corev1.NodeSelectorOperator, values []string) error {
	c, err := newConstraint(op, values)
	if err != nil {
		return fmt.Errorf("requirement %s: %w", key, err)
	}
	b.add(key, c)
	return nil
}

func (b reqBuilder) build() *reqSet {
	r := &reqSet{}
	for k := range b {
		r.keys = append(r.keys, k)
	}
	sort.Strings(r.keys)
	for _, k := range r.keys {
		r.cons = append(r.cons, b[k])
	}
	return r
}

func (r *reqSet) builder() reqBuilder {
	b := reqBuilder{}
	for i, k := range r.keys {
		b[k] = r.cons[i]
	}
	return b
}

// normalizedKey maps deprecated label aliases to their current names, as
// Karpenter does.
func normalizedKey(k string) string {
	switch k {
	case "failure-domain.beta.kubernetes.io/zone":
		return corev1.LabelTopologyZone
	case "failure-domain.beta.kubernetes.io/region":
		return corev1.LabelTopologyRegion
	case "beta.kubernetes.io/arch":
		return corev1.LabelArchStable
	case "beta.kubernetes.io/os":
		return corev1.LabelOSStable
	case "beta.kubernetes.io/instance-type":
		return corev1.LabelInstanceTypeStable
	}
	return k
}
