package crdtest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// The fixtures are unstructured so a test can write what no Go type would
// produce (a bad duration, a misspelt enum), exactly as a user's YAML would.

const validNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    metadata:
      labels:
        team: payments
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
`

// validStaticNodePool is validNodePool with spec.replicas and its only
// allowed limit.
const validStaticNodePool = validNodePool + `  replicas: 3
  limits:
    nodes: "5"
`

// validNodeOverlay is a karpenter.sh/v1alpha1 NodeOverlay.
const validNodeOverlay = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
spec:
  weight: 10
  requirements:
    - key: karpenter.k8s.aws/instance-family
      operator: In
      values: ["m5"]
  priceAdjustment: "+100%"
`

const validNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
spec:
  nodeClassRef:
    group: karpenter.k8s.aws
    kind: EC2NodeClass
    name: default
  requirements:
    - key: karpenter.sh/nodepool
      operator: In
      values: ["default"]
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m5.large", "m5.xlarge"]
  resources:
    requests:
      cpu: "1"
`

// object parses a YAML manifest into an unstructured object named name.
func object(t *testing.T, manifest, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("parsing fixture: %v", err)
	}
	if name != "" {
		u.SetName(name)
	}
	return u
}

// set replaces the field at a dot-separated path (no dots inside keys) with
// a YAML value; "null" sets an explicit null.
func set(path, value string) func(t *testing.T, u *unstructured.Unstructured) {
	return func(t *testing.T, u *unstructured.Unstructured) {
		t.Helper()
		var v any
		if err := yaml.Unmarshal([]byte(value), &v); err != nil {
			t.Fatalf("parsing value for %s: %v", path, err)
		}
		fields := strings.Split(path, ".")
		parent := u.Object
		for _, f := range fields[:len(fields)-1] {
			next, ok := parent[f].(map[string]any)
			if !ok {
				next = map[string]any{}
				parent[f] = next
			}
			parent = next
		}
		parent[fields[len(fields)-1]] = v
	}
}

// unset removes the field at a dot-separated path.
func unset(path string) func(t *testing.T, u *unstructured.Unstructured) {
	return func(t *testing.T, u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, strings.Split(path, ".")...)
	}
}

// requirement is a one-requirement list in YAML.
func requirement(key, operator string, values ...string) string {
	return requirementWithMinValues(key, operator, 0, values...)
}

func requirementWithMinValues(key, operator string, minValues int, values ...string) string {
	r := map[string]any{"key": key, "operator": operator}
	if len(values) > 0 {
		r["values"] = values
	}
	if minValues != 0 {
		r["minValues"] = minValues
	}
	b, _ := yaml.Marshal([]any{r})
	return string(b)
}

// typed converts an unstructured NodePool to the Go type.
func typedNodePool(t *testing.T, u *unstructured.Unstructured) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{}
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, np); err != nil {
		t.Fatalf("decoding NodePool: %v", err)
	}
	return np
}
