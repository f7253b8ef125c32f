package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// Two clusters share one simulated cloud. Cluster a's collector terminates
// a's orphan (and deletes its registered Node), keeps a's claimed instance,
// and never touches cluster b's instance although b's has no NodeClaim.
func TestGarbageCollectionOnlyTouchesOwnOrphans(t *testing.T) {
	env := test.Env(t)
	a := newCloud(t, nil)
	b := joinCloud(t, a.store, test.Name(t, "cluster-b"), a.nodeClass)

	claimed := a.launch(t, "amd64")
	orphan := a.launch(t, "amd64")
	othersOrphan := b.launch(t, "amd64")
	for _, pid := range []string{claimed.Status.ProviderID, orphan.Status.ProviderID, othersOrphan.Status.ProviderID} {
		readyNode(t, pid)
	}

	// Only the claimed instance has a NodeClaim, with its provider ID.
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: test.Name(t, "claimed")},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "sim.joiner.dev", Kind: "SimNodeClass", Name: a.nodeClass},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
		},
	}
	env.Create(t, nc)
	nc.Status.ProviderID = claimed.Status.ProviderID
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	rec := &events.Buffer{}
	gc, err := garbagecollection.NewController(garbagecollection.Options{
		Client: env.Client, APIReader: env.Client, CloudProvider: a.provider, Recorder: rec, GracePeriod: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gc.Collect(t.Context()); err != nil {
		t.Fatal(err)
	}

	if _, err := a.provider.Get(t.Context(), orphan.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("cluster a's orphan was not terminated: %v", err)
	}
	if _, err := a.provider.Get(t.Context(), claimed.Status.ProviderID); err != nil {
		t.Errorf("cluster a's claimed instance was terminated: %v", err)
	}
	if _, err := b.provider.Get(t.Context(), othersOrphan.Status.ProviderID); err != nil {
		t.Errorf("cluster b's instance was terminated by cluster a: %v", err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		n, err := nodeFor(ctx, env.Client, orphan.Status.ProviderID)
		if err != nil {
			return err
		}
		if n != nil && n.DeletionTimestamp.IsZero() {
			return fmt.Errorf("node %s of the orphan remains", n.Name)
		}
		return nil
	})
	if n, err := nodeFor(t.Context(), env.Client, othersOrphan.Status.ProviderID); err != nil || n == nil {
		t.Errorf("cluster b's node is gone: %v", err)
	}
	if reasons := rec.Reasons(); len(reasons) != 1 || reasons[0] != garbagecollection.ReasonOrphanInstanceTerminated {
		t.Errorf("events = %v, want one %s", reasons, garbagecollection.ReasonOrphanInstanceTerminated)
	}

	// Once the claimed instance is terminated behind joiner's back, the next
	// pass deletes its NodeClaim.
	if err := a.provider.Delete(t.Context(), claimed); err != nil {
		t.Fatal(err)
	}
	if err := gc.Collect(t.Context()); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, 0, func(ctx context.Context) error {
		got := &v1.NodeClaim{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil && !got.DeletionTimestamp.IsZero() {
			return nil
		}
		return fmt.Errorf("nodeclaim %s of the vanished instance still exists (%v)", nc.Name, err)
	})
}
