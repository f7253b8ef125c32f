package operator_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestTopologySpreadAcrossZones runs a Deployment that must spread evenly
// over the three zones: joiner launches nodes in every zone and
// kube-scheduler can place every pod.
func TestTopologySpreadAcrossZones(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	s.zoneSpreadDeployment("spread", 9)
	s.waitRunning("spread", 9, 90*time.Second)
	perZone, nodes := s.podsPerZone("spread")
	t.Logf("pods per zone: %v on %d nodes", perZone, nodes)
	if len(perZone) != 3 {
		t.Fatalf("pods in %d zones, want 3: %v", len(perZone), perZone)
	}
	for zone, n := range perZone {
		if n != 3 {
			t.Errorf("zone %s runs %d pods, want 3", zone, n)
		}
	}
}

// TestTopologySpreadCountsOnlyThePodsDomains is the three-replica case of
// issue 31: the pods select a NodePool limited to one zone while another
// NodePool offers the other zones. kube-scheduler counts only the domains
// of nodes the pods may use, so it binds all three in the one zone; joiner
// must plan them there too, not call two of them unsatisfiable because of
// the other pool's zones.
func TestTopologySpreadCountsOnlyThePodsDomains(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Template.Spec.Requirements = append(s.nodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-east-1a"}})
	other := s.nodePool.DeepCopy()
	other.Name = s.nodePool.Name + "-other"
	other.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-east-1b", "sim-east-1c"}},
	}
	s.apply()
	s.env.Create(t, other)
	s.joiner()
	s.zoneSpreadDeployment("spread", 3)
	s.waitRunning("spread", 3, 90*time.Second)
	if perZone, _ := s.podsPerZone("spread"); perZone["sim-east-1a"] != 3 {
		t.Errorf("pods per zone %v, want all three in sim-east-1a", perZone)
	}
}

// zoneSpreadDeployment runs replicas pods of app spread over zones with
// maxSkew 1 (DoNotSchedule).
func (s *scenario) zoneSpreadDeployment(app string, replicas int32) {
	s.deployment(app, replicas, "1", "1Gi", func(spec *corev1.PodSpec) {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       v1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}}
	})
}

// podsPerZone counts app's pods by the zone of the node they are bound
// to, and the scenario's nodes.
func (s *scenario) podsPerZone(app string) (map[string]int, int) {
	s.t.Helper()
	ctx := context.Background()
	nodes, err := s.nodes(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.Name] = n.Labels[v1.LabelTopologyZone]
	}
	pods, err := s.pods(ctx, app)
	if err != nil {
		s.t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, p := range pods {
		perZone[zoneOf[p.Spec.NodeName]]++
	}
	return perZone, len(nodes)
}
