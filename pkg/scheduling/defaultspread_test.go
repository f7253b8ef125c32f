package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func ownedByRS(uid string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID(uid), Controller: ptrTrue()}}
	}
}

func ptrTrue() *bool { b := true; return &b }

// TestDefaultSpread: pods without constraints of their own are planned
// with kube-scheduler's default constraints of their scheduler, with the
// selector it deduces from their ReplicaSet and Services; pods with their
// own constraints, of another scheduler, or with nothing to deduce a
// selector from are not.
func TestDefaultSpread(t *testing.T) {
	zone := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	rs := map[types.UID]scheduling.OwnerSelector{"rs-1": {Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
	for _, tc := range []struct {
		name      string
		spread    *scheduling.DefaultSpread
		opts      []podOpt
		wantZones int
	}{
		{name: "no defaults", opts: []podOpt{labeled("app", "web"), ownedByRS("rs-1")}, wantZones: 1},
		{name: "replicaset's selector", spread: &scheduling.DefaultSpread{Constraints: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": zone}, Owners: rs},
			opts: []podOpt{labeled("app", "web"), ownedByRS("rs-1")}, wantZones: 3},
		{name: "service's selector", spread: &scheduling.DefaultSpread{Constraints: map[string][]corev1.TopologySpreadConstraint{"": zone}, Services: []*corev1.Service{svc}},
			opts: []podOpt{labeled("app", "web")}, wantZones: 3},
		{name: "nothing to deduce a selector from", spread: &scheduling.DefaultSpread{Constraints: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": zone}},
			opts: []podOpt{labeled("app", "web")}, wantZones: 1},
		{name: "another scheduler's pods", spread: &scheduling.DefaultSpread{Constraints: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": zone}, Owners: rs},
			opts: []podOpt{labeled("app", "web"), ownedByRS("rs-1"), func(p *corev1.Pod) { p.Spec.SchedulerName = "other" }}, wantZones: 1},
		{name: "own constraints win", spread: &scheduling.DefaultSpread{Constraints: map[string][]corev1.TopologySpreadConstraint{"default-scheduler": zone}, Owners: rs},
			opts: []podOpt{labeled("app", "web"), ownedByRS("rs-1"), spread(corev1.LabelHostname, 5, corev1.ScheduleAnyway, map[string]string{"app": "web"})}, wantZones: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := pods(3, "web", "1", "1Gi", tc.opts...)
			snap := snapshot([]*scheduling.NodePool{nodePool("default", poolReq("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "on-demand"))}, catalog(), ps)
			snap.DefaultSpread = tc.spread
			plan, err := scheduling.Solve(snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %v", plan.Unschedulable)
			}
			zones := map[string]bool{}
			for _, nc := range plan.NewNodeClaims {
				zones[strings.Join(reqValues(nc, corev1.LabelTopologyZone), ",")] = true
			}
			if len(zones) != tc.wantZones {
				t.Fatalf("planned in zones %v, want %d zone(s)", zones, tc.wantZones)
			}
			for _, p := range ps {
				if len(p.Spec.TopologySpreadConstraints) > 0 && tc.name != "own constraints win" {
					t.Fatalf("the solver changed pod %s", p.Name)
				}
			}
		})
	}
}
