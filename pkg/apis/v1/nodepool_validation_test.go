package v1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validNodePool() *NodePool {
	return &NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: NodePoolSpec{
			Template: NodeClaimTemplate{
				ObjectMeta: ObjectMeta{Labels: map[string]string{"team": "a", LabelCapacityType: CapacityTypeSpot}},
				Spec: NodeClaimTemplateSpec{
					Requirements: []NodeSelectorRequirementWithMinValues{
						{Key: LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
						{Key: LabelAWSInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
					},
					Taints:        []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
					StartupTaints: []corev1.Taint{{Key: "ebs.csi.aws.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}},
					NodeClassRef:  &NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
					ExpireAfter:   MustParseNillableDuration("720h"),
				},
			},
			Disruption: Disruption{
				ConsolidateAfter:    MustParseNillableDuration("0s"),
				ConsolidationPolicy: ConsolidationPolicyWhenEmptyOrUnderutilized,
				Budgets: []Budget{
					{Nodes: "10%"},
					{Nodes: "0", Schedule: ptr.To("@daily"), Duration: &metav1.Duration{Duration: 10 * 60e9}},
				},
			},
		},
	}
}

func TestNodePoolRuntimeValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(np *NodePool)
		// want are substrings, one per expected error, in order; empty = valid.
		want []string
	}{
		{name: "valid", mutate: func(*NodePool) {}},
		{name: "duplicate taint within taints", mutate: func(np *NodePool) {
			s := &np.Spec.Template.Spec
			s.Taints = append(s.Taints, corev1.Taint{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule})
		}, want: []string{"spec.template.spec.taints[1]: Duplicate value: \"taint dedicated:NoSchedule is already set at spec.template.spec.taints[0]"}},
		{name: "duplicate taint across taints and startupTaints", mutate: func(np *NodePool) {
			s := &np.Spec.Template.Spec
			s.StartupTaints = append(s.StartupTaints, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})
		}, want: []string{"spec.template.spec.startupTaints[1]: Duplicate value"}},
		{name: "same key, different effect is fine", mutate: func(np *NodePool) {
			s := &np.Spec.Template.Spec
			s.Taints = append(s.Taints, corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoExecute})
		}},
		{name: "taint key not a qualified name", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Taints[0].Key = "bad key"
		}, want: []string{"spec.template.spec.taints[0].key: Invalid value"}},
		{name: "taint value not a label value", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Taints[0].Value = "-bad-"
		}, want: []string{"spec.template.spec.taints[0].value: Invalid value"}},
		{name: "taint effect", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Taints[0].Effect = "Sometimes"
		}, want: []string{"spec.template.spec.taints[0].effect: Unsupported value"}},
		{name: "capacity-type label value", mutate: func(np *NodePool) {
			np.Spec.Template.ObjectMeta.Labels[LabelCapacityType] = "preemptible"
		}, want: []string{"spec.template.metadata.labels[karpenter.sh/capacity-type]: Unsupported value: \"preemptible\""}},
		{name: "capacity-type requirement value", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				NodeSelectorRequirementWithMinValues{Key: LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "cheap"}})
		}, want: []string{"spec.template.spec.requirements[2].values[1]: Unsupported value: \"cheap\""}},
		{name: "restricted label domain", mutate: func(np *NodePool) {
			np.Spec.Template.ObjectMeta.Labels["node-role.kubernetes.io/worker"] = ""
		}, want: []string{"label domain \"kubernetes.io\" is restricted"}},
		{name: "allowed label subdomain", mutate: func(np *NodePool) {
			np.Spec.Template.ObjectMeta.Labels["node.kubernetes.io/lifecycle"] = "x"
		}},
		{name: "nodepool label", mutate: func(np *NodePool) {
			np.Spec.Template.ObjectMeta.Labels[LabelNodePool] = "x"
		}, want: []string{"label \"karpenter.sh/nodepool\" is restricted"}},
		{name: "hostname requirement", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Key = LabelHostname
		}, want: []string{"requirement key \"kubernetes.io/hostname\" is restricted"}},
		{name: "unknown aws label", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Key = "karpenter.k8s.aws/instance-colour"
		}, want: []string{"label domain \"karpenter.k8s.aws\" is restricted"}},
		{name: "deprecated alias is not well known", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Key = LabelDeprecatedArch
		}, want: []string{"label domain \"kubernetes.io\" is restricted"}},
		{name: "In without values", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = nil
		}, want: []string{"spec.template.spec.requirements[0].values: Required value: operator In needs at least one value"}},
		{name: "Exists with values", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].Operator = corev1.NodeSelectorOpExists
		}, want: []string{"operator Exists takes no values"}},
		{name: "Gt non-integer", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[1].Values = []string{"1.5"}
		}, want: []string{"operator Gt needs a non-negative integer"}},
		{name: "Lte two values", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[1].Operator = NodeSelectorOpLte
			np.Spec.Template.Spec.Requirements[1].Values = []string{"1", "2"}
		}, want: []string{"operator Lte needs exactly one value"}},
		{name: "unknown operator", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[1].Operator = "Near"
		}, want: []string{"spec.template.spec.requirements[1].operator: Unsupported value: \"Near\""}},
		{name: "minValues above In values", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements[0].MinValues = ptr.To(2)
		}, want: []string{"minValues 2 cannot be met: requirement \"kubernetes.io/arch\" In allows only 1 distinct valid values"}},
		{name: "minValues counts only valid capacity types", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				NodeSelectorRequirementWithMinValues{Key: LabelCapacityType, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"reserved"}, MinValues: ptr.To(3)})
		}, want: []string{"minValues 3 cannot be met: requirement \"karpenter.sh/capacity-type\" NotIn allows only 2 distinct valid values"}},
		{name: "minValues satisfiable", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				NodeSelectorRequirementWithMinValues{Key: LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(5)})
		}},
		{name: "budget percent over 100", mutate: func(np *NodePool) {
			np.Spec.Disruption.Budgets[0].Nodes = "150%"
		}, want: []string{"spec.disruption.budgets[0].nodes: Invalid value: \"150%\""}},
		{name: "budget bad cron", mutate: func(np *NodePool) {
			np.Spec.Disruption.Budgets[1].Schedule = ptr.To("61 * * * *")
		}, want: []string{"spec.disruption.budgets[1].schedule: Invalid value: \"61 * * * *\": invalid cron schedule"}},
		{name: "budget schedule without duration", mutate: func(np *NodePool) {
			np.Spec.Disruption.Budgets[1].Duration = nil
		}, want: []string{"schedule and duration must be set together"}},
		{name: "nodeClassRef group with version", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.NodeClassRef.Group = "karpenter.k8s.aws/v1"
		}, want: []string{"spec.template.spec.nodeClassRef.group: Invalid value"}},
		{name: "nodeClassRef missing", mutate: func(np *NodePool) {
			np.Spec.Template.Spec.NodeClassRef = nil
		}, want: []string{"spec.template.spec.nodeClassRef: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := validNodePool()
			tc.mutate(np)
			assertErrors(t, np.RuntimeValidate(), tc.want)
		})
	}
}

func TestNodeClaimRuntimeValidationAllowsNodePoolRequirement(t *testing.T) {
	np := validNodePool()
	nc := &NodeClaim{Spec: NodeClaimSpec{
		Requirements: append(np.Spec.Template.Spec.Requirements,
			NodeSelectorRequirementWithMinValues{Key: LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}}),
		NodeClassRef: np.Spec.Template.Spec.NodeClassRef,
	}}
	assertErrors(t, nc.RuntimeValidate(), nil)
	nc.Spec.Requirements[0].Key = LabelHostname
	assertErrors(t, nc.RuntimeValidate(), []string{"requirement key \"kubernetes.io/hostname\" is restricted"})
}

func assertErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs.ToAggregate())
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
		}
	}
}
