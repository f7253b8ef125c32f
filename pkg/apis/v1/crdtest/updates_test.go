package crdtest

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joiner-dev/joiner/pkg/test"
)

// TestTransitionRules updates valid objects and checks which changes the
// apiserver refuses.
func TestTransitionRules(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		mutate   mutation
		want     string // empty: the update must succeed
	}{
		{name: "nodeClassRef.group is immutable", manifest: validNodePool,
			mutate: set("spec.template.spec.nodeClassRef.group", `sim.joiner.dev`),
			want:   `spec.template.spec.nodeClassRef.group is immutable`},
		{name: "nodeClassRef.kind is immutable", manifest: validNodePool,
			mutate: set("spec.template.spec.nodeClassRef.kind", `OtherNodeClass`),
			want:   `spec.template.spec.nodeClassRef.kind is immutable`},
		{name: "nodeClassRef.name may change", manifest: validNodePool,
			mutate: set("spec.template.spec.nodeClassRef.name", `other`)},
		{name: "NodePool requirements may change", manifest: validNodePool,
			mutate: set("spec.template.spec.requirements", requirement("kubernetes.io/arch", "In", "arm64"))},
		{name: "replicas cannot be added", manifest: validNodePool,
			mutate: set("spec.replicas", `2`),
			want:   `spec.replicas: a NodePool cannot switch between static (replicas set) and dynamic (replicas unset) provisioning`},
		{name: "replicas cannot be removed", manifest: validStaticNodePool,
			mutate: unset("spec.replicas"),
			want:   `spec.replicas: a NodePool cannot switch between static`},
		{name: "replicas may change", manifest: validStaticNodePool,
			mutate: set("spec.replicas", `0`)},
		{name: "NodeClaim spec is immutable", manifest: validNodeClaim,
			mutate: set("spec.requirements", requirement("karpenter.sh/nodepool", "In", "other")),
			want:   `spec is immutable`},
		{name: "NodeClaim nodeClassRef is immutable", manifest: validNodeClaim,
			mutate: set("spec.nodeClassRef.name", `other`),
			want:   `spec is immutable`},
		{name: "NodeClaim labels may change", manifest: validNodeClaim,
			mutate: set("metadata.labels", `{node.kubernetes.io/instance-type: m5.large}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := test.Env(t)
			u := object(t, tc.manifest, test.Name(t, "x"))
			env.Create(t, u)
			updated := &unstructured.Unstructured{}
			updated.SetGroupVersionKind(u.GroupVersionKind())
			if err := env.Client.Get(t.Context(), keyOf(u), updated); err != nil {
				t.Fatal(err)
			}
			tc.mutate(t, updated)
			err := env.Client.Update(t.Context(), updated)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("update refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("update accepted; want an error containing %q", tc.want)
			case !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("got %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}
}
