package v1

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodePoolHash(t *testing.T) {
	base := validNodePool().Hash()
	if base != validNodePool().Hash() {
		t.Fatal("hash is not deterministic")
	}
	for _, tc := range []struct {
		name   string
		mutate func(np *NodePool)
		drift  bool
	}{
		{name: "label added", drift: true, mutate: func(np *NodePool) { np.Spec.Template.ObjectMeta.Labels["x"] = "y" }},
		{name: "annotation added", drift: true, mutate: func(np *NodePool) {
			np.Spec.Template.ObjectMeta.Annotations = map[string]string{"a": "b"}
		}},
		{name: "taint changed", drift: true, mutate: func(np *NodePool) { np.Spec.Template.Spec.Taints[0].Value = "cpu" }},
		{name: "startup taint removed", drift: true, mutate: func(np *NodePool) { np.Spec.Template.Spec.StartupTaints = nil }},
		{name: "node class renamed", drift: true, mutate: func(np *NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }},
		{name: "expireAfter changed", drift: true, mutate: func(np *NodePool) {
			np.Spec.Template.Spec.ExpireAfter = MustParseNillableDuration("24h")
		}},
		{name: "expireAfter Never", drift: true, mutate: func(np *NodePool) {
			np.Spec.Template.Spec.ExpireAfter = MustParseNillableDuration(Never)
		}},
		{name: "terminationGracePeriod set", drift: true, mutate: func(np *NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}},
		{name: "expireAfter respelt", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.ExpireAfter = MustParseNillableDuration("720h0m0s")
		}},
		{name: "requirements changed", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		}},
		{name: "requirement added", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				NodeSelectorRequirementWithMinValues{Key: LabelTopologyZone, Operator: corev1.NodeSelectorOpExists})
		}},
		{name: "budgets changed", mutate: func(np *NodePool) { np.Spec.Disruption.Budgets = nil }},
		{name: "weight and limits changed", mutate: func(np *NodePool) {
			np.Spec.Weight = new(int32)
			np.Spec.Limits = Limits{corev1.ResourceCPU: *resourceMust("10")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := validNodePool()
			tc.mutate(np)
			if drifted := np.Hash() != base; drifted != tc.drift {
				t.Fatalf("hash changed = %v, want %v", drifted, tc.drift)
			}
		})
	}
}

func resourceMust(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
