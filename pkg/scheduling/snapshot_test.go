package scheduling_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestZoneLimitIsAnError checks that a snapshot naming more zones than
// the solver's masks hold is refused with an error naming the limit and
// the zones, instead of the zones past the limit silently disappearing.
func TestZoneLimitIsAnError(t *testing.T) {
	tests := []struct {
		name    string
		zones   int
		wantErr bool
	}{
		{name: "at the limit", zones: scheduling.MaxZones},
		{name: "over the limit", zones: scheduling.MaxZones + 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := instanceType("m5.1x", 1)
			it.Offerings = nil
			var zones []string
			for i := range tt.zones {
				z := fmt.Sprintf("zone-%02d", i)
				zones = append(zones, z)
				it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: "on-demand", Price: 0.1, Available: true})
			}
			it.Requirements[corev1.LabelTopologyZone] = zones
			_, err := scheduling.Solve(snapshot([]*scheduling.NodePool{nodePool("default")}, []*scheduling.InstanceType{it}, one(pod("p", "500m", ""))), scheduling.Options{})
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error for a snapshot over the zone limit")
			}
			for _, want := range []string{fmt.Sprintf("limit of %d", scheduling.MaxZones), "zone-00", zones[len(zones)-1]} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// TestNamespaceSelector checks that a pod anti-affinity term's
// namespaceSelector counts only the pods of the namespaces it matches
// when the snapshot has the namespaces, and every namespace when it has
// none.
func TestNamespaceSelector(t *testing.T) {
	namespaces := []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}},
	}
	antiDB := func(sel *metav1.LabelSelector) podOpt {
		return func(p *corev1.Pod) {
			term := podAffinityTerm(corev1.LabelHostname, map[string]string{"app": "db"})
			term.NamespaceSelector = sel
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		}
	}
	teamA := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	byName := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "team-b"}}
	tests := []struct {
		name       string
		dbNS       string
		selector   *metav1.LabelSelector
		namespaces []*corev1.Namespace
		// wantExisting is whether the pod may join the db pod's node.
		wantExisting bool
	}{
		{name: "db in a namespace the selector does not match", dbNS: "team-b", selector: teamA, namespaces: namespaces, wantExisting: true},
		{name: "db in a namespace the selector matches", dbNS: "team-a", selector: teamA, namespaces: namespaces},
		{name: "selector on the namespace name label", dbNS: "team-b", selector: byName, namespaces: namespaces},
		{name: "empty selector matches every namespace", dbNS: "team-b", selector: &metav1.LabelSelector{}, namespaces: namespaces},
		{name: "unknown namespaces count as every namespace", dbNS: "team-b", selector: teamA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := pod("db", "1", "", labeled("app", "db"))
			db.Namespace = tt.dbNS
			db.Spec.NodeName = "n1"
			web := pod("web", "1", "", antiDB(tt.selector))
			s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), one(web))
			s.Namespaces = tt.namespaces
			s.Nodes = []*scheduling.ExistingNode{{Name: "n1", Initialized: true,
				Labels:      map[string]string{corev1.LabelHostname: "n1", corev1.LabelTopologyZone: "zone-a"},
				Allocatable: list("cpu", "4", "memory", "8Gi", "pods", "20"), Pods: []*corev1.Pod{db}}}
			plan, err := scheduling.Solve(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, s, plan)
			if got := len(plan.Existing) == 1; got != tt.wantExisting {
				t.Errorf("pod joined the db node: %v, want %v\n%s", got, tt.wantExisting, planText(plan))
			}
		})
	}
}

// TestOfferingPrice: the price of exactly the (type, zone, capacity type)
// offering, and false when any of the three does not match.
func TestOfferingPrice(t *testing.T) {
	its := []*scheduling.InstanceType{
		{Name: "m5.large", Offerings: []scheduling.Offering{
			{Zone: "a", CapacityType: "on-demand", Price: 0.096},
			{Zone: "a", CapacityType: "spot", Price: 0.04},
		}},
		{Name: "m5.xlarge", Offerings: []scheduling.Offering{{Zone: "b", CapacityType: "on-demand", Price: 0.192}}},
	}
	for _, tc := range []struct {
		typ, zone, ct string
		want          float64
		found         bool
	}{
		{"m5.large", "a", "spot", 0.04, true},
		{"m5.large", "a", "on-demand", 0.096, true},
		{"m5.xlarge", "b", "on-demand", 0.192, true},
		{"m5.large", "b", "on-demand", 0, false},
		{"m5.xlarge", "b", "spot", 0, false},
		{"c5.large", "a", "on-demand", 0, false},
	} {
		got, found := scheduling.OfferingPrice(its, tc.typ, tc.zone, tc.ct)
		if got != tc.want || found != tc.found {
			t.Errorf("OfferingPrice(%s, %s, %s) = %g, %v; want %g, %v", tc.typ, tc.zone, tc.ct, got, found, tc.want, tc.found)
		}
	}
}
