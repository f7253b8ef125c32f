package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestScaleUp500 is the benchmark of the issue: 500 pending pods from one
// Deployment until every pod runs. It logs the time from the Deployment's
// creation to all 500 pods pending, to the last NodeClaim created, and to
// all pods Running, and joiner's peak RSS.
func TestScaleUp500(t *testing.T) {
	const replicas = 500
	s := newScenario(t)
	// Karpenter's getting-started NodePool: c, m and r families of the
	// third generation and later. (Without it the cheapest plan for these
	// pods is one t4g.micro per pod, which measures the simulated cloud's
	// launch rate rather than provisioning.)
	s.nodePool.Spec.Template.Spec.Requirements = append(s.nodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelAWSInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelAWSInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
	)
	s.apply()
	j := s.joiner()

	start := time.Now()
	s.deployment("scale", replicas, "500m", "512Mi", nil)
	var (
		allPending, firstClaim, lastClaim, allRunning time.Duration
		claims                                        int
	)
	ctx := t.Context()
	deadline := time.Now().Add(8 * time.Minute)
	for allRunning == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d NodeClaims, pending at %s", claims, allPending)
		}
		pods, err := s.pods(ctx, "scale")
		if err != nil {
			t.Fatal(err)
		}
		nc, err := s.nodeClaims(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Since(start)
		if len(nc) != claims {
			claims, lastClaim = len(nc), now
			if firstClaim == 0 {
				firstClaim = now
			}
		}
		if allPending == 0 && len(pods) == replicas && unschedulableOrBound(pods) == replicas {
			allPending = now
		}
		if running(pods) == replicas {
			allRunning = now
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	nodes, err := s.nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j.stop()
	t.Logf("500-pod scale-up: all pods pending (marked unschedulable) %.1fs after the Deployment was created; first NodeClaim at %.1fs, last of %d at %.1fs (%.1fs after all pending); all 500 pods Running at %.1fs (%.1fs after all pending) on %d nodes; joiner peak RSS %.0f MiB",
		allPending.Seconds(), firstClaim.Seconds(), claims, lastClaim.Seconds(), (lastClaim - allPending).Seconds(),
		allRunning.Seconds(), (allRunning - allPending).Seconds(), len(nodes), float64(j.peakRSS)/1024)

	// No NodeClaim launched without pods: every node carries some.
	empty, err := s.emptyNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) > 0 {
		t.Errorf("%d node(s) run no pod of the Deployment: %v", len(empty), empty)
	}
}

// unschedulableOrBound counts pods the scheduler has looked at.
func unschedulableOrBound(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != "" {
			n++
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				n++
			}
		}
	}
	return n
}

// emptyNodes names the scenario's Nodes no pod of the namespace runs on.
func (s *scenario) emptyNodes(ctx context.Context) ([]string, error) {
	nodes, err := s.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	used := map[string]bool{}
	for _, p := range pods.Items {
		if p.Namespace == s.ns {
			used[p.Spec.NodeName] = true
		}
	}
	var out []string
	for _, n := range nodes {
		if !used[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out, nil
}
