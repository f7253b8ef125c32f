package overlay_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestAdjustedPrice(t *testing.T) {
	for _, tc := range []struct {
		change string
		want   float64
	}{
		{"", 1}, {"0.25", 0.25}, {"+0.5", 1.5}, {"-0.5", 0.5}, {"-2", 0}, {"+100%", 2}, {"-15%", 0.85}, {"-100%", 0},
	} {
		if got := overlay.AdjustedPrice(1, tc.change); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("AdjustedPrice(1, %q) = %v, want %v", tc.change, got, tc.want)
		}
	}
}

func instanceType(name, family string, price float64) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name:         name,
		Requirements: map[string][]string{corev1.LabelInstanceTypeStable: {name}, "karpenter.k8s.aws/instance-family": {family}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Offerings: []scheduling.Offering{
			{Zone: "a", CapacityType: "on-demand", Price: price, Available: true},
			{Zone: "a", CapacityType: "spot", Price: price / 2, Available: true},
		},
	}
}

func ov(name string, weight int32, mutate func(*v1alpha1.NodeOverlaySpec)) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if weight > 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	mutate(&o.Spec)
	return o
}

func family(f string) []v1alpha1.NodeSelectorRequirement {
	return []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{f}}}
}

func TestApplyAndEvaluate(t *testing.T) {
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a"}
	its := []*scheduling.InstanceType{instanceType("m5.large", "m5", 0.1), instanceType("c5.large", "c5", 0.09)}
	for _, tc := range []struct {
		name      string
		overlays  []*v1alpha1.NodeOverlay
		wantPrice map[string]float64 // on-demand price by type
		wantCap   string             // "type=resource" that gains capacity
		conflict  string
	}{
		{name: "percent on a family",
			overlays:  []*v1alpha1.NodeOverlay{ov("double-c5", 0, func(s *v1alpha1.NodeOverlaySpec) { s.Requirements = family("c5"); s.PriceAdjustment = ptr.To("+100%") })},
			wantPrice: map[string]float64{"m5.large": 0.1, "c5.large": 0.18}},
		{name: "only spot offerings",
			overlays: []*v1alpha1.NodeOverlay{ov("spot", 0, func(s *v1alpha1.NodeOverlaySpec) {
				s.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}}
				s.Price = ptr.To("5")
			})},
			wantPrice: map[string]float64{"m5.large": 0.1, "c5.large": 0.09}},
		{name: "NodePool template label selects",
			overlays: []*v1alpha1.NodeOverlay{ov("team", 0, func(s *v1alpha1.NodeOverlaySpec) {
				s.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}
				s.Price = ptr.To("1")
			})},
			wantPrice: map[string]float64{"m5.large": 1, "c5.large": 1}},
		{name: "higher weight wins",
			overlays: []*v1alpha1.NodeOverlay{
				ov("low", 1, func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("3") }),
				ov("high", 10, func(s *v1alpha1.NodeOverlaySpec) { s.Requirements = family("m5"); s.Price = ptr.To("2") }),
			},
			wantPrice: map[string]float64{"m5.large": 2, "c5.large": 3}},
		{name: "equal weight, same value merges",
			overlays: []*v1alpha1.NodeOverlay{
				ov("a", 5, func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("2") }),
				ov("b", 5, func(s *v1alpha1.NodeOverlaySpec) { s.Requirements = family("m5"); s.Price = ptr.To("2") }),
			},
			wantPrice: map[string]float64{"m5.large": 2, "c5.large": 2}},
		{name: "equal weight, different prices conflict",
			overlays: []*v1alpha1.NodeOverlay{
				ov("a", 5, func(s *v1alpha1.NodeOverlaySpec) { s.Requirements = family("m5"); s.Price = ptr.To("2") }),
				ov("b", 5, func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("+10%") }),
			},
			conflict: "the price of m5.large"},
		{name: "capacity adds an extended resource",
			overlays: []*v1alpha1.NodeOverlay{ov("fuse", 0, func(s *v1alpha1.NodeOverlaySpec) {
				s.Requirements = family("c5")
				s.Capacity = corev1.ResourceList{"smarter-devices/fuse": resource.MustParse("1")}
			})},
			wantPrice: map[string]float64{"m5.large": 0.1, "c5.large": 0.09}, wantCap: "c5.large=smarter-devices/fuse"},
		{name: "equal weight capacities conflict",
			overlays: []*v1alpha1.NodeOverlay{
				ov("a", 5, func(s *v1alpha1.NodeOverlaySpec) { s.Capacity = corev1.ResourceList{"x/y": resource.MustParse("1")} }),
				ov("b", 5, func(s *v1alpha1.NodeOverlaySpec) { s.Capacity = corev1.ResourceList{"x/y": resource.MustParse("2")} }),
			},
			conflict: "x/y capacity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conflicts := overlay.Evaluate(tc.overlays, []*v1.NodePool{pool}, map[string][]*scheduling.InstanceType{pool.Name: its})
			if tc.conflict != "" {
				if len(conflicts) != 1 || !strings.Contains(conflicts[0].What, tc.conflict) || conflicts[0].A != "a" || conflicts[0].B != "b" {
					t.Fatalf("conflicts %+v, want one between a and b on %q", conflicts, tc.conflict)
				}
				return
			}
			if len(conflicts) != 0 {
				t.Fatalf("unexpected conflicts %+v", conflicts)
			}
			got := overlay.Apply(tc.overlays, pool, its)
			for _, it := range got {
				if p := it.Offerings[0].Price; p < tc.wantPrice[it.Name]-1e-9 || p > tc.wantPrice[it.Name]+1e-9 {
					t.Errorf("%s on-demand price %v, want %v", it.Name, p, tc.wantPrice[it.Name])
				}
				name, res, _ := strings.Cut(tc.wantCap, "=")
				_, has := it.Capacity[corev1.ResourceName(res)]
				if want := it.Name == name; has != want || it.CapacityOverlaid != want {
					t.Errorf("%s: capacity %v (overlaid %v), want %s", it.Name, it.Capacity, it.CapacityOverlaid, tc.wantCap)
				}
			}
			if its[1].Offerings[0].Price != 0.09 || len(its[1].Capacity) != 1 {
				t.Fatal("Apply changed its input")
			}
		})
	}
}
