package v1_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// The CEL rules in the CRDs spell out the restricted label domains and the
// well-known labels as literals; labels.go holds them as Go sets for runtime
// validation. These tests run the CRD's CEL rules in-process (the same
// evaluator the apiserver uses) and check both agree, key by key.

func celValidator(t *testing.T, crdName string) *cel.Validator {
	t.Helper()
	crds, err := apis.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Name != crdName {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			t.Fatal(err)
		}
		return cel.NewValidator(s, true, celconfig.PerCallLimit)
	}
	t.Fatalf("no CRD %s", crdName)
	return nil
}

func celErrors(v *cel.Validator, obj map[string]any) field.ErrorList {
	errs, _ := v.Validate(context.Background(), nil, nil, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs
}

func nodePoolWith(requirementKey string, labels map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": "np"},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
					"requirements": []any{map[string]any{"key": requirementKey, "operator": "Exists"}},
				},
			},
		},
	}
}

func parityKeys() []string {
	keys := sets.New[string](
		"example.com/team", "team", "node-role.kubernetes.io/worker", "kubernetes.io/hostname",
		"node.kubernetes.io/lifecycle", "node-restriction.kubernetes.io/pool", "kops.k8s.io/instancegroup",
		"example.node-restriction.kubernetes.io/pool", "subdomainnode-restriction.kubernetes.io/pool",
		"x.k8s.io/y", "k8s.io/y", "kubernetes.io/custom", "topology.kubernetes.io/rack",
		"karpenter.sh/custom", "sub.karpenter.sh/x", "notkarpenter.sh/x",
		"karpenter.k8s.aws/instance-colour", "topology.k8s.aws/zone-id",
		v1.LabelDeprecatedArch, v1.LabelDeprecatedZone, v1.LabelNodeInitialized, v1.LabelDoNotSyncTaints,
	)
	keys.Insert(sets.List(v1.WellKnownLabels)...)
	keys.Insert(sets.List(v1.AWSWellKnownLabels)...)
	return sets.List(keys)
}

func TestRequirementKeyCELMatchesRuntime(t *testing.T) {
	v := celValidator(t, "nodepools.karpenter.sh")
	for _, key := range parityKeys() {
		t.Run(key, func(t *testing.T) {
			errs := celErrors(v, nodePoolWith(key, nil))
			restricted, why := v1.IsRestrictedLabel(key)
			if celRejects := len(errs) > 0; celRejects != restricted {
				t.Fatalf("CEL rejects=%v (%v), runtime restricted=%v (%s)", celRejects, errs.ToAggregate(), restricted, why)
			}
			for _, e := range errs {
				if !strings.Contains(e.Error(), key) {
					t.Errorf("message does not name the key: %v", e)
				}
			}
		})
	}
}

func TestTemplateLabelCELMatchesRuntime(t *testing.T) {
	v := celValidator(t, "nodepools.karpenter.sh")
	for _, key := range parityKeys() {
		t.Run(key, func(t *testing.T) {
			value := "v"
			if key == v1.LabelCapacityType {
				value = v1.CapacityTypeSpot
			}
			errs := celErrors(v, nodePoolWith("example.com/ok", map[string]any{key: value}))
			restricted, why := v1.IsRestrictedLabel(key)
			if celRejects := len(errs) > 0; celRejects != restricted {
				t.Fatalf("CEL rejects=%v (%v), runtime restricted=%v (%s)", celRejects, errs.ToAggregate(), restricted, why)
			}
		})
	}
}

// TestLabelDomainExceptionsAsKarpenter: Karpenter admits a key whose
// domain ends with an exception domain (node-restriction.kubernetes.io,
// node.kubernetes.io, kops.k8s.io), dot or no dot before it; its own
// regression suite creates a NodePool labelled
// "subdomainnode-restriction.kubernetes.io/custom-label".
func TestLabelDomainExceptionsAsKarpenter(t *testing.T) {
	v := celValidator(t, "nodepools.karpenter.sh")
	for _, key := range []string{
		"node-restriction.kubernetes.io/custom-label",
		"example.node-restriction.kubernetes.io/custom-label",
		"subdomainnode-restriction.kubernetes.io/custom-label",
		"teamnode.kubernetes.io/role",
		"mykops.k8s.io/instancegroup",
	} {
		t.Run(key, func(t *testing.T) {
			if errs := celErrors(v, nodePoolWith("example.com/ok", map[string]any{key: "v"})); len(errs) > 0 {
				t.Errorf("template label rejected: %v", errs.ToAggregate())
			}
			if errs := celErrors(v, nodePoolWith(key, nil)); len(errs) > 0 {
				t.Errorf("requirement rejected: %v", errs.ToAggregate())
			}
			if restricted, why := v1.IsRestrictedLabel(key); restricted {
				t.Errorf("IsRestrictedLabel: restricted (%s)", why)
			}
		})
	}
}

func TestNodeClaimAllowsNodePoolRequirement(t *testing.T) {
	v := celValidator(t, "nodeclaims.karpenter.sh")
	obj := map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": "nc"},
		"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
			"requirements": []any{map[string]any{"key": v1.LabelNodePool, "operator": "In", "values": []any{"default"}}},
		},
	}
	if errs := celErrors(v, obj); len(errs) > 0 {
		t.Fatalf("NodeClaim requirement on %s rejected: %v", v1.LabelNodePool, errs.ToAggregate())
	}
}

// TestBudgetScheduleCELMatchesRuntime: a schedule the CRD admits is one the
// disruption budgets can parse, and the reverse, so a NodePool never fails
// closed at run time for a schedule the API server accepted.
func TestBudgetScheduleCELMatchesRuntime(t *testing.T) {
	v := celValidator(t, "nodepools.karpenter.sh")
	for _, schedule := range []string{
		"@daily", "@hourly", "@weekly", "@monthly", "@yearly", "@annually", "@midnight",
		"0 9 * * 1-5", "0 9 * * mon-fri", "0 9 * * MON-FRI", "*/15 * * * *", "5-10/2 * * * *", "0 0 1,15 * *",
		"0 9 * jan,jul *", "00 09 * * *", "? ? * * ?", "30 23 31 12 6",
		"60 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 32 * *", "0 0 * 13 *", "0 0 * * 7", "*/0 * * * *",
		"1-60 * * * *", "a b c d e", "0 9 * * * *", "TZ=UTC 0 9 * *", "0 9 * * funday", "@reboot", "@every 1h",
	} {
		t.Run(schedule, func(t *testing.T) {
			np := nodePoolWith("example.com/ok", nil)
			np["spec"].(map[string]any)["disruption"] = map[string]any{
				"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s",
				"budgets": []any{map[string]any{"nodes": "1", "schedule": schedule, "duration": "1h"}},
			}
			var celErrs []string
			for _, e := range celErrors(v, np) {
				celErrs = append(celErrs, e.Error())
			}
			b := v1.Budget{Nodes: "1", Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}}
			_, runtimeErr := b.IsActive(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
			if schedule == "@every 1h" {
				// robfig accepts it; Karpenter's CRD pattern does not.
				runtimeErr = errors.New("not a Karpenter schedule")
			}
			if celRejects := len(celErrs) > 0; celRejects != (runtimeErr != nil) {
				t.Fatalf("CEL rejects=%v %v, runtime error=%v", celRejects, celErrs, runtimeErr)
			}
			for _, e := range celErrs {
				if !strings.Contains(e, "spec.disruption.budgets[0].schedule") || !strings.Contains(e, schedule) {
					t.Errorf("message does not name the field and the schedule: %s", e)
				}
			}
		})
	}
}
