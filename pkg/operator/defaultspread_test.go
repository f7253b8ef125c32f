package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// zoneDefaultScheduler is a second kube-scheduler profile of the test
// control plane: kube-scheduler's own PodTopologySpread defaulting with a
// zone spread (defaultingType List, maxSkew 1, DoNotSchedule) for the
// pods that name it and declare no constraints of their own.
const zoneDefaultScheduler = "zone-default-scheduler"

// schedulerProfiles are the test control plane's kube-scheduler profiles
// (controlplane.Options.SchedulerProfiles): the default one, and
// zoneDefaultScheduler.
const schedulerProfiles = `profiles:
- schedulerName: default-scheduler
- schedulerName: ` + zoneDefaultScheduler + `
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
`

// TestSchedulerConfigDefaultSpread: a Deployment whose pods declare no
// spread constraints, run by the kube-scheduler profile whose defaults
// spread over zones. joiner, given the same KubeSchedulerConfiguration as
// SCHEDULER_CONFIG, plans them spread over the three zones, and
// kube-scheduler binds them 3/3/3 on joiner's nodes without another
// launch.
func TestSchedulerConfigDefaultSpread(t *testing.T) {
	s := newScenario(t)
	s.apply()
	cfg := filepath.Join(t.TempDir(), "kube-scheduler.yaml")
	doc := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + schedulerProfiles
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s.joiner("--scheduler-config=" + cfg)
	s.deployment("spread", 9, "1", "1Gi", func(spec *corev1.PodSpec) { spec.SchedulerName = zoneDefaultScheduler })
	s.waitRunning("spread", 9, 90*time.Second)
	perZone, nodes := s.podsPerZone("spread")
	t.Logf("pods per zone: %v on %d nodes", perZone, nodes)
	if len(perZone) != 3 {
		t.Fatalf("kube-scheduler bound the pods in %d zones, want 3: %v", len(perZone), perZone)
	}
	for zone, n := range perZone {
		if n != 3 {
			t.Errorf("zone %s runs %d pods, want 3", zone, n)
		}
	}
	// joiner planned it so: every NodeClaim it launched runs pods, in
	// the zone it planned.
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		zones := map[string]int{}
		for _, nc := range claims {
			zones[nc.Labels[v1.LabelTopologyZone]]++
		}
		if len(zones) != 3 {
			return fmt.Errorf("NodeClaims by zone %v, want three zones", zones)
		}
		return nil
	})
}
