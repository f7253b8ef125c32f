package operator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestRestartMidLaunch kills joiner (SIGKILL) while its NodeClaims are
// launching and starts it again on the same cloud: the new process plans
// the same NodeClaims (no duplicate), finishes the launches, and the cloud
// ends with exactly one instance per NodeClaim (no orphan).
func TestRestartMidLaunch(t *testing.T) {
	s := newScenario(t)
	s.nodeClass.Spec.LaunchDelay = metav1.Duration{Duration: 3 * time.Second}
	s.apply()
	first := s.joiner("--disable-leader-election")
	// One pod per node, so the batch launches several NodeClaims.
	s.deployment("restart", 6, "1", "1Gi", func(spec *corev1.PodSpec) {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   v1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "restart"}},
			}},
		}}
	})

	var before []string
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) < 6 {
			return fmt.Errorf("%d of 6 NodeClaims", len(claims))
		}
		before = claimNames(claims)
		return nil
	})
	first.kill()
	launched := 0
	claims, _ := s.nodeClaims(t.Context())
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			launched++
		}
	}
	t.Logf("killed joiner with %d NodeClaims, %d of them launched", len(before), launched)

	s.joiner("--disable-leader-election")
	s.waitRunning("restart", 6, 90*time.Second)

	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if after := claimNames(claims); !slices.Equal(after, before) {
			return fmt.Errorf("NodeClaims changed across the restart: before %v, after %v", before, after)
		}
		ids := map[string]bool{}
		for _, nc := range claims {
			ids[nc.Status.ProviderID] = true
		}
		instances := liveInstances(t, s.store, s.clusterName)
		var orphans []string
		for _, inst := range instances {
			if !ids[inst.Status.ProviderID] {
				orphans = append(orphans, inst.Status.ProviderID)
			}
		}
		if len(orphans) > 0 || len(instances) != len(claims) {
			return fmt.Errorf("%d instances for %d NodeClaims; orphans %v", len(instances), len(claims), orphans)
		}
		return nil
	})
}

func claimNames(claims []v1.NodeClaim) []string {
	var out []string
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	slices.Sort(out)
	return out
}
