package drift

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func nodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
			ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}},
				},
				NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			},
		}},
	}
}

// nodeClaim is what the provisioner and lifecycle made of nodePool().
func nodeClaim(np *v1.NodePool) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "default-abc",
			Labels: map[string]string{
				v1.LabelNodePool: "default", "team": "a", v1.LabelArch: "amd64", v1.LabelCapacityType: "spot",
				v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1a",
			},
			Annotations: map[string]string{v1.AnnotationNodePoolHash: np.Hash(), v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion},
		},
		Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold", "silver"}},
		}},
	}
}

func TestStaticAndRequirementsDrift(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pool     func(np *v1.NodePool)
		claim    func(nc *v1.NodeClaim)
		want     cloudprovider.DriftReason
		mentions string
	}{
		{name: "unchanged"},
		{name: "template label changed", want: ReasonNodePoolDrifted, pool: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["team"] = "b" }},
		{name: "taint added", want: ReasonNodePoolDrifted, pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "expireAfter changed", want: ReasonNodePoolDrifted, pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h")
		}},
		{name: "behavioural fields do not drift", pool: func(np *v1.NodePool) {
			np.Spec.Weight = new(int32)
			np.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resourceQuantity("10")}
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
		}},
		{name: "hash of another version is not compared", pool: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["team"] = "b" },
			claim: func(nc *v1.NodeClaim) { nc.Annotations[v1.AnnotationNodePoolHashVersion] = "v3" }},
		{name: "no hash is not compared", pool: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["team"] = "b" },
			claim: func(nc *v1.NodeClaim) { nc.Annotations = nil }},
		{name: "requirement narrowed away from the label", want: ReasonRequirementsDrifted, mentions: "label kubernetes.io/arch=amd64", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		}},
		{name: "requirement widened", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"amd64", "arm64"}
		}},
		{name: "spot removed", want: ReasonRequirementsDrifted, mentions: "karpenter.sh/capacity-type In [on-demand]", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements[1].Values = []string{"on-demand"}
		}},
		{name: "NotIn the node's zone", want: ReasonRequirementsDrifted, pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"sim-east-1a"}})
		}},
		{name: "deprecated key normalised", want: ReasonRequirementsDrifted, pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelDeprecatedZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-east-1b"}})
		}},
		{name: "unlabelled key still allowed by the launch requirement", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold"}})
		}},
		{name: "unlabelled key no longer allowed", want: ReasonRequirementsDrifted, mentions: "requirement example.com/tier In [gold silver]", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"bronze"}})
		}},
		{name: "new custom requirement the node never had", want: ReasonRequirementsDrifted, mentions: "no example.com/gpu label", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "example.com/gpu", Operator: corev1.NodeSelectorOpExists})
		}},
		{name: "new DoesNotExist on an absent key", pool: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "example.com/gpu", Operator: corev1.NodeSelectorOpDoesNotExist})
		}},
		{name: "Gte bound no longer met", want: ReasonRequirementsDrifted,
			claim: func(nc *v1.NodeClaim) { nc.Labels["karpenter.k8s.aws/instance-cpu"] = "2" },
			pool: func(np *v1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
					v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-cpu", Operator: v1.NodeSelectorOpGte, Values: []string{"4"}})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := nodePool()
			nc := nodeClaim(np)
			if tc.claim != nil {
				tc.claim(nc)
			}
			if tc.pool != nil {
				tc.pool(np)
			}
			reason, msg := staticDrift(np, nc)
			if reason == "" {
				reason, msg = requirementsDrift(np, nc)
			}
			if reason != tc.want {
				t.Fatalf("drift = %q (%s), want %q", reason, msg, tc.want)
			}
			if tc.mentions != "" && !strings.Contains(msg, tc.mentions) {
				t.Errorf("message %q does not mention %q", msg, tc.mentions)
			}
		})
	}
}

func TestInstanceTypeDrift(t *testing.T) {
	its := []*scheduling.InstanceType{
		{Name: "m5.large", Offerings: []scheduling.Offering{
			{Zone: "sim-east-1a", CapacityType: "spot", Available: false},
			{Zone: "sim-east-1b", CapacityType: "on-demand", Available: true},
		}},
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   cloudprovider.DriftReason
	}{
		{name: "offered (availability is not judged)", labels: map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1a", v1.LabelCapacityType: "spot"}},
		{name: "type gone", labels: map[string]string{v1.LabelInstanceType: "c5.large"}, want: ReasonInstanceTypeNotFound},
		{name: "zone gone", labels: map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1c", v1.LabelCapacityType: "spot"}, want: ReasonInstanceTypeNotFound},
		{name: "capacity type gone", labels: map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1b", v1.LabelCapacityType: "spot"}, want: ReasonInstanceTypeNotFound},
		{name: "not launched yet", labels: map[string]string{}},
		{name: "reservation gone, on-demand still offered", labels: map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1b", v1.LabelCapacityType: "reserved"}},
		{name: "reservation gone, no on-demand in its zone", labels: map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelTopologyZone: "sim-east-1a", v1.LabelCapacityType: "reserved"}, want: ReasonInstanceTypeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
			if got, msg := instanceTypeDrift(its, nc); got != tc.want {
				t.Fatalf("drift = %q (%s), want %q", got, msg, tc.want)
			}
		})
	}
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
