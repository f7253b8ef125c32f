package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestResourceClaimsKeptApart checks that a pod with resource claims does
// not share the verdict of an otherwise identical pod without: under
// IGNORE_DRA_REQUESTS=true the plain pod is placed and the claiming one is
// told why it is not, on every NodePool.
func TestResourceClaimsKeptApart(t *testing.T) {
	plain := pod("plain", "1", "")
	claiming := pod("claiming", "1", "")
	claiming.Spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "gpus", ResourceClaimTemplateName: ptr.To("two-gpus")},
		{Name: "nic", ResourceClaimName: ptr.To("shared-nic")},
	}
	snap := snapshot([]*scheduling.NodePool{nodePool("a"), nodePool("b")}, catalog(), []*corev1.Pod{plain, claiming})
	plan, err := scheduling.Solve(snap, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := countPlanned(plan); got != 1 {
		t.Fatalf("%d pods planned, want 1 (the plain pod):\n%s", got, planText(plan))
	}
	if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod.Name != "claiming" {
		t.Fatalf("unschedulable %v, want only the claiming pod:\n%s", plan.Unschedulable, planText(plan))
	}
	want := scheduling.DynamicResources{Claims: []string{"gpus", "nic"}, Setting: scheduling.IgnoreDRARequestsSetting}
	for _, np := range []string{"a", "b"} {
		r, ok := plan.Unschedulable[0].NodePools[np].(scheduling.DynamicResources)
		if !ok || len(r.Claims) != 2 || r.Claims[0] != want.Claims[0] || r.Claims[1] != want.Claims[1] || r.Setting != want.Setting {
			t.Errorf("nodepool %s: reason %#v, want %#v", np, plan.Unschedulable[0].NodePools[np], want)
		}
	}
}

func countPlanned(p *scheduling.Plan) int {
	n := 0
	for _, e := range p.Existing {
		n += len(e.Pods)
	}
	for _, nc := range p.NewNodeClaims {
		n += len(nc.Pods)
	}
	return n
}
