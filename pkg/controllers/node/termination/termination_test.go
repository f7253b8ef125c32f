package termination_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

const testTimeout = 60 * time.Second

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func expectGone(ctx context.Context, c client.Client, obj client.Object) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%T %s still exists (deleting: %v, finalizers %v)", obj, obj.GetName(), obj.GetDeletionTimestamp() != nil, obj.GetFinalizers())
}

// runningPods binds n pods labelled app=name to node and waits until kwok
// reports them running and ready.
func runningPods(t *testing.T, c client.Client, ns, name, node string, n int) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				Containers:                    []corev1.Container{{Name: "c", Image: "registry.invalid/app"}},
			},
		}
		if err := c.Create(context.Background(), p); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
		pods = append(pods, p)
	}
	test.Eventually(t, testTimeout, func(ctx context.Context) error {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", p.Name, got.Status.Phase)
			}
		}
		return nil
	})
	return pods
}

func blockingPDB(t *testing.T, c client.Client, ns, app string, minAvailable int) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(minAvailable))),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	if err := c.Create(context.Background(), pdb); err != nil {
		t.Fatalf("creating pdb: %v", err)
	}
	// Wait for the disruption controller to have judged the budget, so the
	// test exercises a real refusal rather than an unobserved PDB.
	test.Eventually(t, testTimeout, func(ctx context.Context) error {
		got := &policyv1.PodDisruptionBudget{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration < got.Generation || got.Status.CurrentHealthy < int32(minAvailable) {
			return fmt.Errorf("pdb not observed yet: %+v", got.Status)
		}
		return nil
	})
	return pdb
}

func TestDeletingNodeClaimDrainsNodeAndTerminatesInstance(t *testing.T) {
	h := start(t)
	env := test.Env(t)
	ns := env.Namespace(t)
	nc, node := h.launch(t, test.Name(t, "drain"), nil)
	pods := runningPods(t, h.client, ns, "web", node.Name, 3)

	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		gone(t, h.client, p)
	}
	gone(t, h.client, node)
	gone(t, h.client, nc)
	if _, err := h.cloud.Get(context.Background(), nc.Status.ProviderID); err == nil {
		t.Errorf("instance %s still runs after its NodeClaim is gone", nc.Status.ProviderID)
	}
}

func TestDeletingNodeDeletesItsNodeClaim(t *testing.T) {
	h := start(t)
	nc, node := h.launch(t, test.Name(t, "node"), nil)
	if err := h.client.Delete(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	gone(t, h.client, node)
	gone(t, h.client, nc)
	if _, err := h.cloud.Get(context.Background(), nc.Status.ProviderID); err == nil {
		t.Errorf("instance %s still runs", nc.Status.ProviderID)
	}
}

func TestPodDisruptionBudgetHoldsDrainUntilItAllows(t *testing.T) {
	h := start(t)
	env := test.Env(t)
	ns := env.Namespace(t)
	nc, node := h.launch(t, test.Name(t, "pdb"), nil)
	runningPods(t, h.client, ns, "db", node.Name, 2)
	pdb := blockingPDB(t, h.client, ns, "db", 2)

	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	// The drain is reported as blocked by the budget, on the NodeClaim and
	// in an event, and the node stays.
	test.Eventually(t, testTimeout, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return err
		}
		c := got.StatusConditions().Get(v1.ConditionTypeDrained)
		if c == nil || c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, "PodDisruptionBudget") {
			return fmt.Errorf("drained condition = %+v", c)
		}
		return nil
	})
	if !hasEvent(h.recorder, events.FailedDraining, "PodDisruptionBudget allows no more disruptions") {
		t.Errorf("no FailedDraining event naming the budget; events: %v", h.recorder.Reasons())
	}
	test.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		got := &corev1.Node{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			return fmt.Errorf("node went away while its PDB forbade evictions: %w", err)
		}
		if !hasFinalizer(got) {
			return fmt.Errorf("node lost its finalizer while pods were protected")
		}
		return nil
	})

	// Once the budget allows it, the drain finishes.
	if err := h.client.Delete(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	gone(t, h.client, node)
	gone(t, h.client, nc)
}

func TestTerminationGracePeriodOverridesBudget(t *testing.T) {
	h := start(t)
	env := test.Env(t)
	ns := env.Namespace(t)
	nc, node := h.launch(t, test.Name(t, "tgp"), &metav1.Duration{Duration: 3 * time.Second})
	pods := runningPods(t, h.client, ns, "stuck", node.Name, 2)
	blockingPDB(t, h.client, ns, "stuck", 2)

	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, testTimeout, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return client.IgnoreNotFound(err)
		}
		if got.Annotations[v1.AnnotationNodeClaimTerminationTimestamp] == "" {
			return fmt.Errorf("no termination deadline recorded")
		}
		return nil
	})
	for _, p := range pods {
		gone(t, h.client, p)
	}
	gone(t, h.client, node)
	gone(t, h.client, nc)
	if !hasEvent(h.recorder, events.Disrupted, "terminationGracePeriod deadline") {
		t.Errorf("no Disrupted event on the pods deleted at the deadline; events: %v", h.recorder.Reasons())
	}
}

func hasEvent(b *events.Buffer, reason, substring string) bool {
	for _, e := range b.Events() {
		if e.Reason == reason && strings.Contains(e.Message, substring) {
			return true
		}
	}
	return false
}

func TestDeadNodeWithTerminatedInstanceIsReleasedWithoutDrain(t *testing.T) {
	h := start(t)
	env := test.Env(t)
	ns := env.Namespace(t)
	nc, node := h.launchWith(t, test.Name(t, "dead"), launchOptions{nodeClass: simNodeClass})
	// Pods bound to a machine that no longer runs: no kubelet will ever
	// confirm their deletion.
	for i := range 2 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("orphan-%d", i), Namespace: ns},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/app"}}},
		}
		if err := h.client.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	// The instance is reclaimed behind joiner's back (a spot interruption).
	if err := h.cloud.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	gone(t, h.client, node)
	gone(t, h.client, nc)
}

func TestNodeClaimOfAnotherControllerIsLeftAlone(t *testing.T) {
	h := start(t)
	// An EC2NodeClass NodeClaim: the fake cloud serves only SimNodeClass,
	// so this one belongs to another controller (say, Karpenter).
	nc, node := h.launchWith(t, test.Name(t, "foreign"), launchOptions{kubelet: true, nodeClass: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}})
	if err := h.client.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	test.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return fmt.Errorf("foreign nodeclaim finalized by joiner: %w", err)
		}
		if !hasFinalizer(got) {
			return fmt.Errorf("joiner removed another controller's finalizer")
		}
		n := &corev1.Node{}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return fmt.Errorf("joiner deleted another controller's node: %w", err)
		}
		return nil
	})
	if _, err := h.cloud.Get(context.Background(), nc.Status.ProviderID); err != nil {
		t.Errorf("joiner terminated another controller's instance: %v", err)
	}
	// Let the test's objects go.
	for _, obj := range []client.Object{nc, node} {
		stored := obj.DeepCopyObject().(client.Object)
		if err := h.client.Get(context.Background(), client.ObjectKeyFromObject(obj), stored); err == nil {
			stored.SetFinalizers(nil)
			_ = h.client.Update(context.Background(), stored)
		}
	}
}
