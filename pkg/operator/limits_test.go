package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestNodePoolLimitsHold asks for far more than a NodePool's cpu limit
// allows: joiner launches up to the limit, never beyond, and tells the
// pods left pending why.
func TestNodePoolLimitsHold(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("16")}
	s.apply()
	s.joiner()
	s.deployment("limited", 40, "1", "1Gi", nil)

	// Some pods run, the rest are told about the limit.
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		pods, err := s.pods(ctx, "limited")
		if err != nil {
			return err
		}
		if running(pods) == 0 {
			return fmt.Errorf("no pod runs yet")
		}
		msg, err := s.failedScheduling(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(msg, "limit") {
			return fmt.Errorf("no FailedScheduling event mentions the limit yet (last: %q)", msg)
		}
		t.Logf("%d pods running; FailedScheduling: %s", running(pods), msg)
		return nil
	})
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		total := resource.Quantity{}
		for _, nc := range claims {
			if q, ok := nc.Status.Capacity[corev1.ResourceCPU]; ok {
				total.Add(q)
			}
		}
		if total.Cmp(resource.MustParse("16")) > 0 {
			return fmt.Errorf("%d NodeClaims hold %s cpu, over the limit of 16", len(claims), total.String())
		}
		return nil
	})
}

// failedScheduling returns the message of a FailedScheduling event joiner
// recorded in the scenario's namespace ("" when none).
func (s *scenario) failedScheduling(ctx context.Context) (string, error) {
	var list corev1.EventList
	if err := s.env.Client.List(ctx, &list, client.InNamespace(s.ns)); err != nil {
		return "", err
	}
	for _, e := range list.Items {
		if e.Reason == "FailedScheduling" && e.ReportingController == "joiner" {
			return e.Message, nil
		}
	}
	return "", nil
}
