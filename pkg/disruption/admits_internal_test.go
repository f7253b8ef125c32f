package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestOfferingPriceReadsEveryOperator: pricing a replacement reads the
// requirements on zone and capacity type with the one reading of the
// operators. The engine's own copy handled only In, NotIn and
// DoesNotExist, so Gt, Lt (and Gte/Lte) on a zone were silently admitted
// and a replacement was priced on an offering its requirements exclude.
func TestOfferingPriceReadsEveryOperator(t *testing.T) {
	zone := v1.LabelTopologyZone
	req := func(op corev1.NodeSelectorOperator, values ...string) []scheduling.Requirement {
		return []scheduling.Requirement{{Key: zone, Operator: op, Values: values}}
	}
	for _, tc := range []struct {
		name  string
		reqs  []scheduling.Requirement
		value string
		want  bool
	}{
		{name: "no requirement", value: "zone-a", want: true},
		{name: "In admits a listed value", reqs: req(corev1.NodeSelectorOpIn, "zone-a"), value: "zone-a", want: true},
		{name: "In refuses another", reqs: req(corev1.NodeSelectorOpIn, "zone-a"), value: "zone-b"},
		{name: "NotIn refuses a listed value", reqs: req(corev1.NodeSelectorOpNotIn, "zone-a"), value: "zone-a"},
		{name: "NotIn admits another", reqs: req(corev1.NodeSelectorOpNotIn, "zone-a"), value: "zone-b", want: true},
		{name: "Exists admits any value", reqs: req(corev1.NodeSelectorOpExists), value: "zone-b", want: true},
		{name: "DoesNotExist admits no value", reqs: req(corev1.NodeSelectorOpDoesNotExist), value: "zone-a"},
		{name: "Gt on a non-integer label admits nothing", reqs: req(corev1.NodeSelectorOpGt, "1"), value: "zone-a"},
		{name: "Lt on a non-integer label admits nothing", reqs: req(corev1.NodeSelectorOpLt, "9"), value: "zone-a"},
		{name: "Gte on a non-integer label admits nothing", reqs: req(v1.NodeSelectorOpGte, "1"), value: "zone-a"},
		{name: "Gt compares integers", reqs: req(corev1.NodeSelectorOpGt, "1"), value: "2", want: true},
		{name: "Lt compares integers", reqs: req(corev1.NodeSelectorOpLt, "2"), value: "2"},
		{name: "requirements on other keys do not matter", reqs: []scheduling.Requirement{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}, value: "zone-a", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := &scheduling.InstanceType{Name: "m5.large", Offerings: []scheduling.Offering{{Zone: tc.value, CapacityType: "on-demand", Price: 0.1, Available: true}}}
			if _, got := offeringPrice(it, tc.reqs, 0, true); got != tc.want {
				t.Errorf("offering in %q priced under %v: %v, want %v", tc.value, tc.reqs, got, tc.want)
			}
		})
	}
}
