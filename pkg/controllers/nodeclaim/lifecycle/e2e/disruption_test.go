package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/drift"
	"github.com/joiner-dev/joiner/pkg/controllers/nodeclaim/expiration"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/hash"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/test"
)

// registerDisruption adds the controllers that feed disruption (NodePool
// hash, drift, expiration) to mgr.
func (h *harness) registerDisruption(t *testing.T, mgr manager.Manager, recorder events.Recorder) {
	t.Helper()
	hc, err := hash.NewController(hash.Options{Client: mgr.GetClient()})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := drift.NewController(drift.Options{Client: mgr.GetClient(), CloudProvider: h.cloud})
	if err != nil {
		t.Fatal(err)
	}
	ec, err := expiration.NewController(expiration.Options{Client: mgr.GetClient(), CloudProvider: h.cloud, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Register(manager.Manager) error }{hc, dc, ec} {
		if err := c.Register(mgr); err != nil {
			t.Fatal(err)
		}
	}
}

// gone waits until the NodeClaim named name no longer exists.
func (h *harness) gone(t *testing.T, name string, within time.Duration) {
	t.Helper()
	test.Eventually(t, within, func(ctx context.Context) error {
		err := h.kube.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{})
		if err == nil {
			return fmt.Errorf("nodeclaim %s still exists", name)
		}
		return client.IgnoreNotFound(err)
	})
}

// update applies mutate to the latest obj, retrying on conflicts.
func (h *harness) update(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	test.Eventually(t, 0, func(ctx context.Context) error {
		if err := h.kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return h.kube.Update(ctx, obj)
	})
}
