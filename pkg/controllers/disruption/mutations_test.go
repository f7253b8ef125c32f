package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestWritesFromAStaleCacheLand writes each of disruption's changes to a
// Node, a NodeClaim and a NodePool while the cache holds a copy the API
// server has moved past (another writer's taint or condition came after
// it, or the command's own taint): the write must land in one call and
// keep the other writer's entry.
// Re-reading the cache on each conflict, as disruption did before,
// conflicted on every retry and failed: in the XL performance run kwok's
// heartbeats kept a thousand Nodes ahead of the cache.
func TestWritesFromAStaleCacheLand(t *testing.T) {
	env := test.Start(t, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
	ctx := t.Context()
	other := corev1.Taint{Key: "joiner.test/other", Value: "writer", Effect: corev1.TaintEffectNoSchedule}
	otherCondition := "JoinerTestOther"
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cmd := &disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonDrifted, Candidates: []string{"n"}}

	hasTaint := func(n *corev1.Node, want corev1.Taint) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&want) })
	}
	// onlyOthersTaint checks an untaint: the disrupted taint is gone and
	// the other writer's is kept.
	onlyOthersTaint := func(t *testing.T, got client.Object) {
		n := got.(*corev1.Node)
		if hasTaint(n, v1.DisruptedNoScheduleTaint) || !hasTaint(n, other) {
			t.Errorf("taints %v, want only the other writer's", n.Spec.Taints)
		}
	}
	for _, tc := range []struct {
		name string
		// obj is created, cached as it is, then moved on by another writer
		// (move); write is disruption's write through the stale cache;
		// check reads the API server's copy.
		obj   func(name string) client.Object
		move  func(client.Object)
		write func(cache client.Client, api client.Reader, name string) error
		check func(t *testing.T, got client.Object)
	}{
		{
			name: "taint",
			obj:  func(name string) client.Object { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} },
			move: func(o client.Object) { n := o.(*corev1.Node); n.Spec.Taints = append(n.Spec.Taints, other) },
			write: func(cache client.Client, api client.Reader, name string) error {
				return taint(ctx, cache, api, name)
			},
			check: func(t *testing.T, got client.Object) {
				n := got.(*corev1.Node)
				if !hasTaint(n, v1.DisruptedNoScheduleTaint) || !hasTaint(n, other) {
					t.Errorf("taints %v, want the disrupted taint and the other writer's", n.Spec.Taints)
				}
			},
		},
		{
			name: "untaint",
			obj: func(name string) client.Object {
				return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}
			},
			move: func(o client.Object) { n := o.(*corev1.Node); n.Spec.Taints = append(n.Spec.Taints, other) },
			write: func(cache client.Client, api client.Reader, name string) error {
				return untaint(ctx, cache, api, name)
			},
			check: onlyOthersTaint,
		},
		{
			// A roll-back right after the command's taint, before the
			// cache shows it: the taint must go now, not at the next
			// pass's clean-up.
			name: "untaint the cache has not seen",
			obj:  func(name string) client.Object { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} },
			move: func(o client.Object) {
				n := o.(*corev1.Node)
				n.Spec.Taints = append(n.Spec.Taints, v1.DisruptedNoScheduleTaint, other)
			},
			write: func(cache client.Client, api client.Reader, name string) error {
				return untaint(ctx, cache, api, name)
			},
			check: onlyOthersTaint,
		},
		{
			name: "disruption reason",
			obj: func(name string) client.Object {
				return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeClaimSpec{
					NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
				}}
			},
			move: func(o client.Object) {
				o.(*v1.NodeClaim).StatusConditions().At(now).SetTrue(otherCondition)
			},
			write: func(cache client.Client, api client.Reader, name string) error {
				return setDisruptionReason(ctx, cache, api, name, cmd, now)
			},
			check: func(t *testing.T, got client.Object) {
				nc := got.(*v1.NodeClaim)
				if !nc.StatusConditions().IsTrue(v1.ConditionTypeDisruptionReason) || !nc.StatusConditions().IsTrue(otherCondition) {
					t.Errorf("conditions %v, want %s and the other writer's", nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
				}
			},
		},
		{
			name: "drift halted",
			obj: func(name string) client.Object {
				return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
					NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: "default"},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{},
				}}}}
			},
			move: func(o client.Object) {
				o.(*v1.NodePool).StatusConditions().At(now).SetTrue(otherCondition)
			},
			write: func(cache client.Client, api client.Reader, name string) error {
				return haltDrift(ctx, &Options{Client: cache, APIReader: api, Clock: clocktesting.NewFakeClock(now), Recorder: &events.Buffer{}, DriftHaltDuration: time.Hour}, name, "replacements did not initialise")
			},
			check: func(t *testing.T, got client.Object) {
				np := got.(*v1.NodePool)
				if !np.StatusConditions().IsTrue(ConditionTypeDriftHalted) || !np.StatusConditions().IsTrue(otherCondition) {
					t.Errorf("conditions %v, want %s and the other writer's", np.Status.Conditions, ConditionTypeDriftHalted)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj(test.Name(t, "stale"))
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			key := client.ObjectKeyFromObject(obj)
			if err := env.Client.Get(ctx, key, obj); err != nil {
				t.Fatal(err)
			}
			held := obj.DeepCopyObject().(client.Object)

			// Another writer moves the object on; the cache keeps the old copy.
			moved := obj.DeepCopyObject().(client.Object)
			tc.move(moved)
			var err error
			switch moved.(type) {
			case *corev1.Node:
				err = env.Client.Update(ctx, moved)
			default:
				err = env.Client.Status().Update(ctx, moved)
			}
			if err != nil {
				t.Fatalf("the other writer: %v", err)
			}

			if err := tc.write(test.StaleCache{Client: env.Client, Held: []client.Object{held}}, env.Client, key.Name); err != nil {
				t.Fatalf("writing through a stale cache: %v", err)
			}
			got := obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}
