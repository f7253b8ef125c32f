package hash

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func TestRestamp(t *testing.T) {
	drifted := []metav1.Condition{{Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted"}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		conditions  []metav1.Condition
		want        map[string]string
	}{
		{name: "current version is left alone",
			annotations: map[string]string{v1.AnnotationNodePoolHash: "old", v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}},
		{name: "Karpenter's version is re-stamped with the pool's hash",
			annotations: map[string]string{v1.AnnotationNodePoolHash: "123", v1.AnnotationNodePoolHashVersion: "v3"},
			want:        map[string]string{v1.AnnotationNodePoolHash: "pool", v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}},
		{name: "no hash at all is stamped",
			want: map[string]string{v1.AnnotationNodePoolHash: "pool", v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}},
		{name: "a drifted NodeClaim keeps its hash and stays drifted",
			annotations: map[string]string{v1.AnnotationNodePoolHash: "123", v1.AnnotationNodePoolHashVersion: "v3"}, conditions: drifted,
			want: map[string]string{v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}, Status: v1.NodeClaimStatus{Conditions: tc.conditions}}
			got := Restamp(nc, "pool")
			if len(got) != len(tc.want) {
				t.Fatalf("Restamp = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("Restamp = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestAnnotationsFollowTheTemplate(t *testing.T) {
	np := &v1.NodePool{Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "a"},
	}}}}
	before := Annotations(np)
	np.Spec.Weight = new(int32)
	if Annotations(np)[v1.AnnotationNodePoolHash] != before[v1.AnnotationNodePoolHash] {
		t.Fatal("weight changed the hash")
	}
	np.Spec.Template.Spec.NodeClassRef.Name = "b"
	if Annotations(np)[v1.AnnotationNodePoolHash] == before[v1.AnnotationNodePoolHash] {
		t.Fatal("a new node class did not change the hash")
	}
}
