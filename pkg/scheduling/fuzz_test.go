package scheduling_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// admission is the NodePool CRD's own admission, run in-process the way
// kube-apiserver runs it: structural defaulting, the OpenAPI schema
// (patterns, enums, bounds) and the CEL rules.
type admission struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var (
	admissionOnce sync.Once
	nodePoolCRD   *admission
	admissionErr  error
)

func nodePoolAdmission(t testing.TB) *admission {
	admissionOnce.Do(func() {
		crds, err := apis.CRDs()
		if err != nil {
			admissionErr = err
			return
		}
		for _, crd := range crds {
			if crd.Name != "nodepools.karpenter.sh" {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
				admissionErr = err
				return
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				admissionErr = err
				return
			}
			v, _, err := apiservervalidation.NewSchemaValidator(internal)
			if err != nil {
				admissionErr = err
				return
			}
			nodePoolCRD = &admission{structural: s, schema: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
			return
		}
		admissionErr = errorString("no nodepools.karpenter.sh CRD")
	})
	if admissionErr != nil {
		t.Fatal(admissionErr)
	}
	return nodePoolCRD
}

type errorString string

func (e errorString) Error() string { return string(e) }

// admit defaults obj and returns what the API server would reject it for.
func (a *admission) admit(obj map[string]any) field.ErrorList {
	structuraldefaulting.Default(obj, a.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, obj, a.schema)
	if len(errs) > 0 {
		return errs
	}
	celErrs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs
}

var (
	fuzzKeys = []string{
		corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, "karpenter.sh/capacity-type", corev1.LabelArchStable,
		corev1.LabelOSStable, "karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-family", "team",
		"example.com/tier", "karpenter.sh/nodepool", corev1.LabelHostname, "node.kubernetes.io/instance-type",
	}
	fuzzOperators = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", "Near"}
)

// requirement builds one requirement from fuzz input; an index past the
// lists uses the raw key.
func requirement(key uint8, rawKey string, op uint8, values string, minValues int8) map[string]any {
	r := map[string]any{"operator": fuzzOperators[int(op)%len(fuzzOperators)]}
	if int(key) < len(fuzzKeys)*2 {
		r["key"] = fuzzKeys[int(key)%len(fuzzKeys)]
	} else {
		r["key"] = rawKey
	}
	if values != "" {
		var vs []any
		for _, v := range strings.SplitN(values, ",", 6) {
			vs = append(vs, v)
		}
		r["values"] = vs
	}
	if minValues > 0 {
		r["minValues"] = int64(minValues)
	}
	return r
}

// FuzzSolveAdmittedNodePool builds NodePools from fuzz input, keeps those
// kube-apiserver would admit (the CRD's schema and CEL rules, run
// in-process), and feeds them to the solver through the one adapter every
// caller uses. Whatever the runtime validation still rejects gets an error
// naming the field; whatever it accepts is solved without panic or error,
// each pod is placed once or explained, and every launch option respects
// the NodePool's requirements. Seeds: testdata/fuzz/FuzzSolveAdmittedNodePool.
func FuzzSolveAdmittedNodePool(f *testing.F) {
	f.Add(uint8(0), "", uint8(0), "m5.2x,m5.4x", int8(0), uint8(5), uint8(4), "2", int8(0), "team=a", "", uint16(0), uint8(0))
	f.Add(uint8(2), "", uint8(0), "spot", int8(1), uint8(1), uint8(1), "zone-a", int8(0), "", "dedicated", uint16(8), uint8(10))
	f.Add(uint8(6), "", uint8(1), "m5", int8(0), uint8(7), uint8(2), "", int8(0), "team=b", "", uint16(0), uint8(100))
	f.Add(uint8(0), "", uint8(0), "m5.1x,m5.2x,m5.4x", int8(3), uint8(5), uint8(6), "4", int8(0), "", "", uint16(3), uint8(0))
	f.Add(uint8(40), "example.com/x", uint8(2), "", int8(0), uint8(9), uint8(3), "", int8(0), "example.com/x=y", "", uint16(0), uint8(0))
	f.Add(uint8(5), "", uint8(4), "-1", int8(0), uint8(5), uint8(5), "99999999999999999999", int8(0), "", "", uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, k1 uint8, raw1 string, op1 uint8, vals1 string, min1 int8,
		k2 uint8, op2 uint8, vals2 string, min2 int8, podSelector, taintKey string, limitCPU uint16, weight uint8) {
		a := nodePoolAdmission(t)
		tmplSpec := map[string]any{
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
			"requirements": []any{requirement(k1, raw1, op1, vals1, min1), requirement(k2, "", op2, vals2, min2)},
		}
		if taintKey != "" {
			tmplSpec["taints"] = []any{map[string]any{"key": taintKey, "effect": "NoSchedule"}}
		}
		spec := map[string]any{"template": map[string]any{"spec": tmplSpec}}
		if limitCPU > 0 {
			spec["limits"] = map[string]any{"cpu": int64(limitCPU)}
		}
		if weight > 0 {
			spec["weight"] = int64(weight)
		}
		obj := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "fuzz"}, "spec": spec}
		if errs := a.admit(obj); len(errs) > 0 {
			return // kube-apiserver rejects it: never reaches joiner
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		api, err := nodepool.DecodeAPI(data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "spec.") && !strings.HasPrefix(msg, "metadata.") {
				t.Fatalf("an admitted NodePool is rejected without naming the field: %v\n%s", err, data)
			}
			return
		}
		np := nodepool.FromNodePool(api)

		var ps []*corev1.Pod
		ps = append(ps, pod("plain", "1", "1Gi"))
		if k, v, ok := strings.Cut(podSelector, "="); ok && k != "" {
			ps = append(ps, pod("selective", "500m", "512Mi", nodeSelector(k, v)))
		}
		if taintKey != "" {
			ps = append(ps, pod("tolerant", "2", "1Gi", tolerate(taintKey, "", corev1.TaintEffectNoSchedule)))
		}
		plan, err := scheduling.Solve(snapshot([]*scheduling.NodePool{np}, catalog(), ps), scheduling.Options{})
		if err != nil {
			t.Fatalf("solving an admitted NodePool: %v\n%s", err, data)
		}
		seen := map[string]int{}
		for _, nc := range plan.NewNodeClaims {
			if len(nc.InstanceTypes) == 0 {
				t.Fatalf("new NodeClaim with no instance type\n%s", data)
			}
			for _, p := range nc.Pods {
				seen[p.Name]++
			}
			for _, it := range nc.InstanceTypes {
				for key, vals := range it.Requirements {
					if len(vals) == 1 && !scheduling.RequirementsAdmit(np.Requirements, key, vals[0]) {
						t.Fatalf("launch option %s has %s=%s, which the NodePool's requirements exclude\n%s", it.Name, key, vals[0], data)
					}
				}
			}
		}
		for _, pe := range plan.Unschedulable {
			seen[pe.Pod.Name]++
			if len(pe.NodePools) == 0 && pe.Existing == nil {
				t.Fatalf("pod %s is unschedulable without a reason\n%s", pe.Pod.Name, data)
			}
		}
		for _, p := range ps {
			if seen[p.Name] != 1 {
				t.Fatalf("pod %s appears %d times in the plan\n%s", p.Name, seen[p.Name], data)
			}
		}
	})
}
