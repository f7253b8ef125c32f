package overlay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Order sorts overlays as they apply: highest weight first (no weight is
// 0), then by name, so equal weights merge in a stable order. It returns a
// new slice.
func Order(overlays []*v1alpha1.NodeOverlay) []*v1alpha1.NodeOverlay {
	out := slices.Clone(overlays)
	slices.SortStableFunc(out, func(a, b *v1alpha1.NodeOverlay) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func weight(o *v1alpha1.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// priceChange is the overlay's price or priceAdjustment ("" when neither).
func priceChange(o *v1alpha1.NodeOverlay) string {
	switch {
	case o.Spec.Price != nil:
		return *o.Spec.Price
	case o.Spec.PriceAdjustment != nil:
		return *o.Spec.PriceAdjustment
	}
	return ""
}

// AdjustedPrice is price changed by an overlay's price ("0.25": replaced)
// or priceAdjustment ("+0.5", "-10%": added to it), never below zero. A
// change the CRD's pattern would refuse leaves the price as it is.
func AdjustedPrice(price float64, change string) float64 {
	if change == "" {
		return price
	}
	if !strings.HasPrefix(change, "+") && !strings.HasPrefix(change, "-") {
		if v, err := strconv.ParseFloat(change, 64); err == nil {
			return v
		}
		return price
	}
	if pct, ok := strings.CutSuffix(change, "%"); ok {
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return price
		}
		return max(price*(1+v/100), 0)
	}
	v, err := strconv.ParseFloat(change, 64)
	if err != nil {
		return price
	}
	return max(price+v, 0)
}

// matches reports whether every requirement of o admits the instance
// type it bought through off (nil: any offering) in pool: the type's
// labels, the offering's zone and capacity type, the NodePool's name and
// its template labels.
func matches(o *v1alpha1.NodeOverlay, pool *v1.NodePool, it *scheduling.InstanceType, off *scheduling.Offering) bool {
	for _, r := range o.Spec.Requirements {
		key := v1.NormalizeLabel(r.Key)
		var have []string
		switch key {
		case v1.LabelInstanceType:
			have = []string{it.Name}
		case v1.LabelNodePool:
			have = []string{pool.Name}
		case v1.LabelTopologyZone:
			if off != nil {
				have = []string{off.Zone}
			}
		case v1.LabelCapacityType:
			if off != nil {
				have = []string{off.CapacityType}
			}
		default:
			have = it.Requirements[key]
			if v, ok := pool.Spec.Template.ObjectMeta.Labels[key]; ok {
				have = append(slices.Clone(have), v)
			}
		}
		if !v1.RequirementAdmitsAny(r.Operator, r.Values, have) {
			return false
		}
	}
	return true
}

// matchesType reports whether o matches it through any of its offerings
// (an overlay's capacity applies to the whole type, as Karpenter's).
func matchesType(o *v1alpha1.NodeOverlay, pool *v1.NodePool, it *scheduling.InstanceType) bool {
	if len(it.Offerings) == 0 {
		return matches(o, pool, it, nil)
	}
	for i := range it.Offerings {
		if matches(o, pool, it, &it.Offerings[i]) {
			return true
		}
	}
	return false
}

// Conflict is two overlays of equal weight that set different values for
// the same offering or resource.
type Conflict struct {
	A, B string
	// What they disagree on, e.g. `the price of m5.large spot in
	// us-east-1a (NodePool default): "0.2" and "+10%"`.
	What string
}

// decision is what the ordered overlays do to one instance type of pool.
type decision struct {
	// price is the winning change of each offering ("" none).
	price []string
	// capacity are the added resources.
	capacity  corev1.ResourceList
	conflicts []Conflict
}

func decide(ordered []*v1alpha1.NodeOverlay, pool *v1.NodePool, it *scheduling.InstanceType) decision {
	d := decision{price: make([]string, len(it.Offerings))}
	for i := range it.Offerings {
		off := &it.Offerings[i]
		var winner *v1alpha1.NodeOverlay
		for _, o := range ordered {
			change := priceChange(o)
			if change == "" || !matches(o, pool, it, off) {
				continue
			}
			if winner == nil {
				winner, d.price[i] = o, change
				continue
			}
			if weight(o) != weight(winner) {
				break
			}
			if change != d.price[i] {
				d.conflicts = append(d.conflicts, Conflict{A: winner.Name, B: o.Name,
					What: fmt.Sprintf("the price of %s %s in %s (NodePool %s): %q and %q", it.Name, off.CapacityType, off.Zone, pool.Name, d.price[i], change)})
			}
		}
	}
	setBy := map[corev1.ResourceName]*v1alpha1.NodeOverlay{}
	for _, o := range ordered {
		if len(o.Spec.Capacity) == 0 || !matchesType(o, pool, it) {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(o.Spec.Capacity)) {
			q := o.Spec.Capacity[name]
			prev, set := setBy[name]
			switch {
			case !set:
				if d.capacity == nil {
					d.capacity = corev1.ResourceList{}
				}
				setBy[name], d.capacity[name] = o, q.DeepCopy()
			case weight(prev) == weight(o) && q.Cmp(d.capacity[name]) != 0:
				have := d.capacity[name]
				d.conflicts = append(d.conflicts, Conflict{A: prev.Name, B: o.Name,
					What: fmt.Sprintf("the %s capacity of %s (NodePool %s): %s and %s", name, it.Name, pool.Name, have.String(), q.String())})
			}
		}
	}
	return d
}

// Evaluate checks every overlay against every NodePool's instance types
// (typesByPool) and returns the conflicts, one per disagreeing pair and
// subject, in a stable order. No conflict means Apply may use them all.
func Evaluate(overlays []*v1alpha1.NodeOverlay, pools []*v1.NodePool, typesByPool map[string][]*scheduling.InstanceType) []Conflict {
	ordered := Order(overlays)
	seen := map[[2]string]bool{}
	var out []Conflict
	for _, pool := range pools {
		for _, it := range typesByPool[pool.Name] {
			for _, c := range decide(ordered, pool, it).conflicts {
				if key := [2]string{c.A, c.B}; !seen[key] {
					seen[key] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Apply returns pool's instance types with the overlays applied: new
// InstanceType values (PriceOverlaid or CapacityOverlaid set) where an
// overlay changed a price or added capacity, the originals elsewhere.
// The caller makes sure the overlays do not conflict (Evaluate).
func Apply(overlays []*v1alpha1.NodeOverlay, pool *v1.NodePool, its []*scheduling.InstanceType) []*scheduling.InstanceType {
	if len(overlays) == 0 {
		return its
	}
	ordered := Order(overlays)
	out := make([]*scheduling.InstanceType, len(its))
	for i, it := range its {
		d := decide(ordered, pool, it)
		priced := slices.ContainsFunc(d.price, func(s string) bool { return s != "" })
		if !priced && len(d.capacity) == 0 {
			out[i] = it
			continue
		}
		cp := *it
		if priced {
			cp.Offerings = slices.Clone(it.Offerings)
			for j, change := range d.price {
				cp.Offerings[j].Price = AdjustedPrice(cp.Offerings[j].Price, change)
			}
			cp.PriceOverlaid = true
		}
		if len(d.capacity) > 0 {
			cp.Capacity = it.Capacity.DeepCopy()
			maps.Copy(cp.Capacity, d.capacity)
			cp.CapacityOverlaid = true
		}
		out[i] = &cp
	}
	return out
}
