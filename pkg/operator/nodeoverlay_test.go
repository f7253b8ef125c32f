package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// nodeOverlay makes priceAdjustment change the price of one family's
// instance types in the scenario's NodePool.
func (s *scenario) nodeOverlay(name string, weight int32, family, change string) *v1alpha1.NodeOverlay {
	return &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(s.t, name)},
		Spec: v1alpha1.NodeOverlaySpec{
			Weight: ptr.To(weight),
			Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{s.nodePool.Name}},
				{Key: v1.LabelAWSInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{family}},
			},
			PriceAdjustment: ptr.To(change),
		},
	}
}

// launchedTypes are the instance types of the scenario's NodeClaims, by
// NodeClaim name, once launched.
func (s *scenario) launchedTypes(ctx context.Context) (map[string]v1.NodeClaim, error) {
	claims, err := s.nodeClaims(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]v1.NodeClaim{}
	for _, nc := range claims {
		if nc.Labels[v1.LabelInstanceType] != "" {
			out[nc.Name] = nc
		}
	}
	return out, nil
}

// TestNodeOverlayMovesTheNextLaunch: with the NodeOverlay gate on, an
// overlay that makes the family joiner just launched 100% dearer moves the
// next launch to another family, and that NodeClaim carries Karpenter's
// price-overlay-applied annotation.
func TestNodeOverlayMovesTheNextLaunch(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner("--feature-gates=NodeOverlay=true")
	s.deployment("first", 1, "1", "1Gi", nil)
	var first v1.NodeClaim
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		launched, err := s.launchedTypes(ctx)
		if err != nil {
			return err
		}
		for _, nc := range launched {
			first = nc
			return nil
		}
		return fmt.Errorf("no NodeClaim launched yet")
	})
	family := first.Labels[v1.LabelAWSInstanceFamily]
	if family == "" {
		t.Fatalf("NodeClaim %s has no %s label: %v", first.Name, v1.LabelAWSInstanceFamily, first.Labels)
	}
	if _, ok := first.Annotations[v1alpha1.AnnotationPriceOverlayApplied]; ok {
		t.Fatalf("NodeClaim %s launched before any overlay carries %s", first.Name, v1alpha1.AnnotationPriceOverlayApplied)
	}
	o := s.nodeOverlay("dearer", 10, family, "+100%")
	s.env.Create(t, o)
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		got := &v1alpha1.NodeOverlay{}
		if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded) {
			return fmt.Errorf("NodeOverlay %s: ValidationSucceeded not True yet: %v", o.Name, got.Status.Conditions)
		}
		return nil
	})
	// A second pod of the same size, which the first node has no room for.
	s.deployment("second", 1, "1", "1Gi", nil)
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		launched, err := s.launchedTypes(ctx)
		if err != nil {
			return err
		}
		for name, nc := range launched {
			if name == first.Name {
				continue
			}
			if got := nc.Labels[v1.LabelAWSInstanceFamily]; got == family {
				return fmt.Errorf("NodeClaim %s launched %s, of the family the overlay made dearer", name, nc.Labels[v1.LabelInstanceType])
			}
			if nc.Annotations[v1alpha1.AnnotationPriceOverlayApplied] != "true" {
				return fmt.Errorf("NodeClaim %s lacks %s: %v", name, v1alpha1.AnnotationPriceOverlayApplied, nc.Annotations)
			}
			t.Logf("first launch %s, after the overlay %s", first.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelInstanceType])
			return nil
		}
		return fmt.Errorf("no second NodeClaim launched yet")
	})
}

// TestNodeOverlayConflict: two overlays of equal weight that set different
// prices for the same types are both ValidationSucceeded=False, reason
// Conflict, naming each other.
func TestNodeOverlayConflict(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner("--feature-gates=NodeOverlay=true")
	a := s.nodeOverlay("a", 7, "m5", "+100%")
	b := s.nodeOverlay("b", 7, "m5", "+50%")
	s.env.Create(t, a, b)
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		for _, pair := range [][2]*v1alpha1.NodeOverlay{{a, b}, {b, a}} {
			got := &v1alpha1.NodeOverlay{}
			if err := s.env.Client.Get(ctx, client.ObjectKeyFromObject(pair[0]), got); err != nil {
				return err
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Conflict" || !strings.Contains(c.Message, pair[1].Name) {
				return fmt.Errorf("NodeOverlay %s: ValidationSucceeded %+v, want False/Conflict naming %s", pair[0].Name, c, pair[1].Name)
			}
		}
		return nil
	})
}

// TestNodeOverlayGateOff: without the NodeOverlay gate joiner starts, an
// overlay gets an event naming the gate, and launches ignore it.
func TestNodeOverlayGateOff(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner()
	o := s.nodeOverlay("off", 10, "t4g", "+1000%")
	s.env.Create(t, o)
	test.Eventually(t, 60*time.Second, func(ctx context.Context) error {
		var list corev1.EventList
		if err := s.env.Client.List(ctx, &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == o.Name && e.Reason == events.FeatureGateDisabled && strings.Contains(e.Message, "NodeOverlay") {
				return nil
			}
		}
		return fmt.Errorf("no %s event naming NodeOverlay on %s yet", events.FeatureGateDisabled, o.Name)
	})
	s.deployment("ignored", 1, "1", "1Gi", nil)
	test.Eventually(t, 90*time.Second, func(ctx context.Context) error {
		launched, err := s.launchedTypes(ctx)
		if err != nil {
			return err
		}
		for name, nc := range launched {
			if _, ok := nc.Annotations[v1alpha1.AnnotationPriceOverlayApplied]; ok {
				return fmt.Errorf("NodeClaim %s carries %s with the gate off", name, v1alpha1.AnnotationPriceOverlayApplied)
			}
			return nil
		}
		return fmt.Errorf("no NodeClaim launched yet")
	})
}
