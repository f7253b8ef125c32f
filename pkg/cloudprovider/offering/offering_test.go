package offering

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func instanceType(name, arch, cpu string, offerings ...scheduling.Offering) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name:         name,
		Requirements: map[string][]string{v1.LabelArch: {arch}, v1.LabelAWSInstanceCPU: {cpu}},
		Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		Offerings:    offerings,
	}
}

func TestCandidates(t *testing.T) {
	its := []*scheduling.InstanceType{
		instanceType("big", "amd64", "8", scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: 0.4, Available: true}),
		instanceType("small", "amd64", "2",
			scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: 0.1, Available: true},
			scheduling.Offering{Zone: "b", CapacityType: "spot", Price: 0.03, Available: true},
			scheduling.Offering{Zone: "c", CapacityType: "spot", Price: 0.02, Available: false}),
		instanceType("arm", "arm64", "2", scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: 0.08, Available: true}),
	}
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
	}
	for _, tc := range []struct {
		name     string
		reqs     []v1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		want     string
	}{
		{name: "cheapest first, unavailable left out", want: "[small/b/spot arm/a/on-demand small/a/on-demand big/a/on-demand]"},
		{name: "arch", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")}, want: "[small/b/spot small/a/on-demand big/a/on-demand]"},
		{name: "capacity type and zone", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand"), req(v1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "b")}, want: "[arm/a/on-demand small/a/on-demand big/a/on-demand]"},
		{name: "numeric label", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelAWSInstanceCPU, corev1.NodeSelectorOpGt, "4")}, want: "[big/a/on-demand]"},
		{name: "requests that do not fit", requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, want: "[big/a/on-demand]"},
		{name: "instance type", reqs: []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "arm")}, want: "[arm/a/on-demand]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(Describe(Candidates(its, tc.reqs, tc.requests))); got != tc.want {
				t.Errorf("candidates = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInstanceLabels(t *testing.T) {
	it := instanceType("small", "amd64", "2")
	it.Requirements[v1.LabelOS] = []string{"linux", "windows"}
	o := scheduling.Offering{Zone: "a", CapacityType: "spot"}
	labels := InstanceLabels(it, o, "r", []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}}})
	for k, want := range map[string]string{v1.LabelInstanceType: "small", v1.LabelTopologyZone: "a", v1.LabelTopologyRegion: "r", v1.LabelCapacityType: "spot", v1.LabelOS: "windows", v1.LabelArch: "amd64"} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, labels[k], want)
		}
	}
}
