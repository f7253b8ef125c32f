package v1_test

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/joiner-dev/joiner/pkg/apis"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// The CRD's CEL rules spell the alias grammar and the restricted tag keys as
// literals; ParseAlias and ValidateTagKey hold them in Go for the
// controllers. These tests run the CRD's rules in-process (the API server's
// own evaluator) and check that both sides agree, input by input.

func ec2NodeClassCEL(t *testing.T) *cel.Validator {
	t.Helper()
	crds, err := apis.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Name != "ec2nodeclasses.karpenter.k8s.aws" {
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
	t.Fatal("no EC2NodeClass CRD embedded")
	return nil
}

func celErrors(v *cel.Validator, spec map[string]any) field.ErrorList {
	obj := map[string]any{
		"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
		"metadata": map[string]any{"name": "parity"},
		"spec":     spec,
	}
	errs, _ := v.Validate(context.Background(), nil, nil, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs
}

func specWith(alias string, tags map[string]any) map[string]any {
	selector := []any{map[string]any{"tags": map[string]any{"karpenter.sh/discovery": "c"}}}
	spec := map[string]any{
		"role":                       "role",
		"amiSelectorTerms":           []any{map[string]any{"alias": alias}},
		"subnetSelectorTerms":        selector,
		"securityGroupSelectorTerms": selector,
	}
	if tags != nil {
		spec["tags"] = tags
	}
	return spec
}

func TestAliasCELMatchesParseAlias(t *testing.T) {
	v := ec2NodeClassCEL(t)
	for _, alias := range []string{
		"al2@latest", "al2023@latest", "al2023@v20240807", "bottlerocket@v1.20.3", "bottlerocket@1.20.3",
		"windows2019@latest", "windows2022@latest", "windows2025@latest", "al2023@release_1-2",
		"windows2022@v20240807", "windows2022@Latest", "al2023", "al2023@", "@latest", "al2023@v1@v2",
		"AL2023@latest", "Al2@latest", "ubuntu@latest", "custom@latest", "al2023@-1", "al2023@.1",
		"al2023@v1/2", "al2023@v 1", "al2 023@latest",
	} {
		t.Run(alias, func(t *testing.T) {
			errs := celErrors(v, specWith(alias, nil))
			_, err := awsv1.ParseAlias(alias)
			if celRejects := len(errs) > 0; celRejects != (err != nil) {
				t.Fatalf("CEL rejects=%v (%v), ParseAlias error=%v", celRejects, errs.ToAggregate(), err)
			}
		})
	}
}

func TestTagCELMatchesValidateTagKey(t *testing.T) {
	v := ec2NodeClassCEL(t)
	keys := append([]string{
		"", "team", "Name", "karpenter.sh/discovery", "karpenter.sh/nodepool-owner", "karpenter.k8s.aws/cluster",
		"kubernetes.io/cluster", "kubernetes.io/cluster/prod", "kubernetes.io/clusterfoo", "kubernetes.io/role",
		"eks:eks-cluster-name-x", "eks:nodegroup-name",
	}, awsv1.RestrictedTagKeys...)
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			errs := celErrors(v, specWith("al2023@latest", map[string]any{key: "v"}))
			err := awsv1.ValidateTagKey(key)
			if celRejects := len(errs) > 0; celRejects != (err != nil) {
				t.Fatalf("CEL rejects=%v (%v), ValidateTagKey error=%v", celRejects, errs.ToAggregate(), err)
			}
		})
	}
}
