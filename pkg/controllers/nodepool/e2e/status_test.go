package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/readiness"
	"github.com/joiner-dev/joiner/pkg/test"
)

func waitCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	test.Eventually(t, 0, func(ctx context.Context) error {
		np := &v1.NodePool{}
		if err := test.Env(t).Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			return err
		}
		c := meta.FindStatusCondition(np.Status.Conditions, typ)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("%s = %v, want %s/%s", typ, c, status, reason)
		}
		return nil
	})
}

// TestNodePoolReadyFollowsItsNodeClass: NotFound until the SimNodeClass
// exists, Unknown until it reports readiness, then Ready.
func TestNodePoolReadyFollowsItsNodeClass(t *testing.T) {
	env := test.Env(t)
	start(t)
	class := test.Name(t, "simnc")
	np := test.NodePool(test.NodePoolOptions{Name: test.Name(t, "pool"), NodeClassRef: test.SimNodeClassRef(class)})
	env.Create(t, np)
	waitCondition(t, np.Name, v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, readiness.ReasonNodeClassNotFound)
	waitCondition(t, np.Name, v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "")
	waitCondition(t, np.Name, v1.ConditionTypeReady, metav1.ConditionFalse, "")

	nc := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: class}}
	env.Create(t, nc)
	waitCondition(t, np.Name, v1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, readiness.ReasonNodeClassReadinessUnknown)

	nc.Status.Conditions = []metav1.Condition{{Type: simv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, np.Name, v1.ConditionTypeReady, metav1.ConditionTrue, "")
}

// TestNodePoolCountsItsNodeClaims: status.nodes and status.resources sum
// the NodePool's launched NodeClaims.
func TestNodePoolCountsItsNodeClaims(t *testing.T) {
	env := test.Env(t)
	start(t)
	np := test.NodePool(test.NodePoolOptions{Name: test.Name(t, "pool")})
	env.Create(t, np)
	for i, cpu := range []string{"2", "4"} {
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, fmt.Sprintf("nc%d", i)), Labels: map[string]string{v1.LabelNodePool: np.Name}},
			Spec:       v1.NodeClaimSpec{NodeClassRef: np.Spec.Template.Spec.NodeClassRef, Requirements: np.Spec.Template.Spec.Requirements},
		}
		env.Create(t, nc)
		nc.Status.ProviderID = "sim:///zone-a/" + nc.Name
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}
		if err := env.Client.Status().Update(t.Context(), nc); err != nil {
			t.Fatal(err)
		}
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		got := &v1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			return err
		}
		cpu := got.Status.Resources[corev1.ResourceCPU]
		if got.Status.Nodes == nil || *got.Status.Nodes != 2 || cpu.String() != "6" {
			return fmt.Errorf("status nodes=%v resources=%v, want 2 nodes and 6 cpu", got.Status.Nodes, got.Status.Resources)
		}
		return nil
	})
}
