package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/drift"
	"github.com/joiner-dev/joiner/pkg/test"
)

// launchedFromPool creates a NodeClaim stamped with the NodePool's current
// template hash, as the provisioner stamps the NodeClaims it creates, and
// waits until it launched.
func (h *harness) launchedFromPool(t *testing.T) *v1.NodeClaim {
	t.Helper()
	np := &v1.NodePool{}
	if err := h.kube.Get(t.Context(), client.ObjectKey{Name: h.pool}, np); err != nil {
		t.Fatal(err)
	}
	nc := h.nodeClaim(t)
	nc.Spec.StartupTaints = nil
	nc.Annotations = map[string]string{v1.AnnotationNodePoolHash: np.Hash(), v1.AnnotationNodePoolHashVersion: v1.NodePoolHashVersion}
	h.create(t, nc)
	return h.condition(t, nc.Name, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")
}

// TestDriftAfterNodePoolTemplateChange: the hash controller writes the
// NodePool's hash; a template change (a new label) changes it and marks
// the NodeClaim launched from the old template NodePoolDrifted.
func TestDriftAfterNodePoolTemplateChange(t *testing.T) {
	h := start(t, options{disruption: true})
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: h.pool}}
	h.poolHash(t, np)
	nc := h.launchedFromPool(t)
	if c := h.drifted(t, nc.Name); c != nil {
		t.Fatalf("a NodeClaim of an unchanged NodePool is Drifted: %+v", c)
	}

	h.update(t, np, func() { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "payments"} })
	got := h.condition(t, nc.Name, v1.ConditionTypeDrifted, metav1.ConditionTrue, string(drift.ReasonNodePoolDrifted))
	requireMentions(t, conditionOf(got, v1.ConditionTypeDrifted).Message, h.pool, "template changed")
	h.poolHash(t, np)
}

// TestDriftAfterSimNodeClassImageChange: an instance records the image it
// booted (status.imageID carries spec.imageVersion); a new image version
// on the SimNodeClass makes it ImageDrifted.
func TestDriftAfterSimNodeClassImageChange(t *testing.T) {
	h := start(t, options{disruption: true, imageVersion: "v1"})
	nc := h.launchedFromPool(t)
	if !strings.HasSuffix(nc.Status.ImageID, "-v1") {
		t.Fatalf("status.imageID %q does not record image version v1", nc.Status.ImageID)
	}
	class := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: h.nodeClass}}
	h.update(t, class, func() { class.Spec.ImageVersion = "v2" })
	got := h.condition(t, nc.Name, v1.ConditionTypeDrifted, metav1.ConditionTrue, string(sim.DriftImage))
	requireMentions(t, conditionOf(got, v1.ConditionTypeDrifted).Message, string(sim.DriftImage))

	// Rolling the image back un-drifts the node.
	h.update(t, class, func() { class.Spec.ImageVersion = "v1" })
	test.Eventually(t, 0, func(ctx context.Context) error {
		if c := h.drifted(t, nc.Name); c != nil {
			return fmt.Errorf("still drifted: %s", c.Reason)
		}
		return nil
	})
}

// TestDriftAfterNodePoolRequirementChange: requirements are not hashed;
// a NodeClaim whose labels the NodePool's requirements no longer allow is
// RequirementsDrifted, and a behavioural change (weight) drifts nothing.
func TestDriftAfterNodePoolRequirementChange(t *testing.T) {
	h := start(t, options{disruption: true})
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: h.pool}}
	h.poolHash(t, np)
	nc := h.launchedFromPool(t)
	h.update(t, np, func() { np.Spec.Weight = ptr.To[int32](50) })
	h.update(t, np, func() {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot},
		})
	})
	got := h.condition(t, nc.Name, v1.ConditionTypeDrifted, metav1.ConditionTrue, string(drift.ReasonRequirementsDrifted))
	requireMentions(t, conditionOf(got, v1.ConditionTypeDrifted).Message, "karpenter.sh/capacity-type=on-demand", "karpenter.sh/capacity-type In [spot]")
}

// TestHashVersionChangeRestamps: a NodeClaim carrying another hash version
// (launched by Karpenter, whose hash joiner does not reproduce) is
// re-stamped with the NodePool's hash and joiner's version, not drifted.
func TestHashVersionChangeRestamps(t *testing.T) {
	h := start(t, options{disruption: true})
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: h.pool}}
	h.poolHash(t, np)
	nc := h.nodeClaim(t)
	nc.Annotations = map[string]string{v1.AnnotationNodePoolHash: "6543210", v1.AnnotationNodePoolHashVersion: "v3"}
	h.create(t, nc)
	h.condition(t, nc.Name, v1.ConditionTypeLaunched, metav1.ConditionTrue, "")
	// Any NodePool event reconciles the hash; a behavioural change keeps
	// the hash itself.
	h.update(t, np, func() { np.Spec.Weight = ptr.To[int32](10) })
	test.Eventually(t, 0, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return err
		}
		if got.Annotations[v1.AnnotationNodePoolHashVersion] != v1.NodePoolHashVersion || got.Annotations[v1.AnnotationNodePoolHash] != np.Hash() {
			return fmt.Errorf("annotations %v, want the NodePool's hash %s and version %s", got.Annotations, np.Hash(), v1.NodePoolHashVersion)
		}
		return nil
	})
	if c := h.drifted(t, nc.Name); c != nil {
		t.Fatalf("a re-stamped NodeClaim is Drifted: %+v", c)
	}
}

// TestDriftWhenInstanceTypeLeavesTheCatalog: narrowing the SimNodeClass's
// catalog to other families makes a running instance's type
// InstanceTypeNotFound.
func TestDriftWhenInstanceTypeLeavesTheCatalog(t *testing.T) {
	h := start(t, options{disruption: true})
	nc := h.launchedFromPool(t)
	if !strings.HasPrefix(nc.Labels[v1.LabelInstanceType], "m5.") {
		t.Fatalf("launched %s, want an m5 (the cheapest amd64 family of the harness's catalog)", nc.Labels[v1.LabelInstanceType])
	}
	class := &simv1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: h.nodeClass}}
	h.update(t, class, func() { class.Spec.Catalog.InstanceFamilies = []string{"g5"} })
	got := h.condition(t, nc.Name, v1.ConditionTypeDrifted, metav1.ConditionTrue, string(drift.ReasonInstanceTypeNotFound))
	requireMentions(t, conditionOf(got, v1.ConditionTypeDrifted).Message, nc.Labels[v1.LabelInstanceType], "no longer offered")
}

// poolHash waits until the NodePool carries its current template hash.
func (h *harness) poolHash(t *testing.T, np *v1.NodePool) {
	t.Helper()
	test.Eventually(t, 0, func(ctx context.Context) error {
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
			return err
		}
		if got, want := np.Annotations[v1.AnnotationNodePoolHash], np.Hash(); got != want || np.Annotations[v1.AnnotationNodePoolHashVersion] != v1.NodePoolHashVersion {
			return fmt.Errorf("nodepool hash annotation %q (version %q), want %q", got, np.Annotations[v1.AnnotationNodePoolHashVersion], want)
		}
		return nil
	})
}

func (h *harness) drifted(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := h.kube.Get(t.Context(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc.StatusConditions().Get(v1.ConditionTypeDrifted)
}

func conditionOf(nc *v1.NodeClaim, typ string) metav1.Condition {
	if c := nc.StatusConditions().Get(typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}
