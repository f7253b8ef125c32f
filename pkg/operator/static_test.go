package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestStaticNodePool runs a static NodePool (spec.replicas) with the
// StaticCapacity gate on: three initialised nodes without a pod to ask for
// them, status.nodes through the scale subresource, then `kubectl scale
// --replicas 1` leaves one within a minute.
func TestStaticNodePool(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Replicas = ptr.To[int64](3)
	s.apply()
	s.joiner("--feature-gates=StaticCapacity=true")

	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		return s.staticNodes(ctx, 3)
	})
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		scale := &autoscalingv1.Scale{}
		if err := s.env.Client.SubResource("scale").Get(ctx, s.nodePool, scale); err != nil {
			return err
		}
		if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 {
			return fmt.Errorf("scale subresource: spec %d status %d, want 3 and 3", scale.Spec.Replicas, scale.Status.Replicas)
		}
		return nil
	})
	// The provisioner never plans for a static NodePool: three nodes and
	// no more, for a while.
	test.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) != 3 {
			return fmt.Errorf("%d NodeClaims, want 3", len(claims))
		}
		return nil
	})

	// kubectl scale nodepool NAME --replicas 1 writes the scale subresource.
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
	if err := s.env.Client.SubResource("scale").Update(t.Context(), s.nodePool, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling the NodePool: %v", err)
	}
	start := time.Now()
	test.Eventually(t, time.Minute, func(ctx context.Context) error {
		return s.staticNodes(ctx, 1)
	})
	t.Logf("scaled from 3 to 1 node in %.1fs", time.Since(start).Seconds())
}

// TestStaticNodePoolGateOff: without the StaticCapacity gate joiner starts,
// launches nothing for a static NodePool and tells the NodePool which gate
// it needs.
func TestStaticNodePoolGateOff(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Replicas = ptr.To[int64](2)
	s.apply()
	s.joiner()
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var list corev1.EventList
		if err := s.env.Client.List(ctx, &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == s.nodePool.Name && e.Reason == events.FeatureGateDisabled && strings.Contains(e.Message, "StaticCapacity") {
				return nil
			}
		}
		return fmt.Errorf("no %s event naming StaticCapacity on NodePool %s yet", events.FeatureGateDisabled, s.nodePool.Name)
	})
	test.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		if len(claims) != 0 {
			return fmt.Errorf("%d NodeClaims for a static NodePool with the gate off", len(claims))
		}
		return nil
	})
}

// staticNodes checks the scenario's NodePool has exactly n live NodeClaims,
// each initialised with a Node that runs no pod but DaemonSet ones, and
// no other Node left.
func (s *scenario) staticNodes(ctx context.Context, n int) error {
	claims, err := s.nodeClaims(ctx)
	if err != nil {
		return err
	}
	if len(claims) != n {
		return fmt.Errorf("%d NodeClaims, want %d", len(claims), n)
	}
	for _, nc := range claims {
		if !nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized) {
			return fmt.Errorf("NodeClaim %s not initialised", nc.Name)
		}
	}
	nodes, err := s.nodes(ctx)
	if err != nil {
		return err
	}
	if len(nodes) != n {
		return fmt.Errorf("%d Nodes, want %d", len(nodes), n)
	}
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(s.ns)); err != nil {
		return err
	}
	if len(pods.Items) != 0 {
		return fmt.Errorf("%d pods in the test's namespace, want none", len(pods.Items))
	}
	np := &v1.NodePool{}
	if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(s.nodePool), np); err != nil {
		return err
	}
	if np.Status.Nodes == nil || *np.Status.Nodes != int64(n) {
		return fmt.Errorf("status.nodes %v, want %d", np.Status.Nodes, n)
	}
	return nil
}

// TestStaticNodePoolDrift: changing a static NodePool's template drifts its
// nodes; each is replaced through static drift (the replacement launches
// first, the count never falls below replicas for long), and the pool ends
// with replicas nodes, all of the new template.
func TestStaticNodePoolDrift(t *testing.T) {
	s := newScenario(t)
	s.nodePool.Spec.Replicas = ptr.To[int64](2)
	s.apply()
	s.joiner("--feature-gates=StaticCapacity=true", "--disruption-poll-interval=1s")
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error { return s.staticNodes(ctx, 2) })
	old := map[string]bool{}
	claims, err := s.nodeClaims(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims {
		old[nc.Name] = true
	}

	np := &v1.NodePool{}
	if err := s.env.Client.Get(t.Context(), client.ObjectKeyFromObject(s.nodePool), np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"generation": "two"}
	if err := s.env.Client.Update(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 3*time.Minute, func(ctx context.Context) error {
		if err := s.staticNodes(ctx, 2); err != nil {
			return err
		}
		claims, err := s.nodeClaims(ctx)
		if err != nil {
			return err
		}
		for _, nc := range claims {
			if old[nc.Name] || nc.Labels["generation"] != "two" {
				return fmt.Errorf("NodeClaim %s is of the old template", nc.Name)
			}
		}
		return nil
	})
}
