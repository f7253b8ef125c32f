package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/events"
)

// TestRegistrationTimeoutSaysWhyRegistrationFailed: the registration
// timeout explains the failure the Registered condition recorded, and
// points at the kubelet only when no Node appeared.
func TestRegistrationTimeoutSaysWhyRegistrationFailed(t *testing.T) {
	kubeletGuidance := []string{"journalctl -u kubelet", "aws-auth", "userData", "architecture"}
	for _, tc := range []struct {
		name string
		// nodes are the Nodes registered for the instance's provider ID.
		nodes []string
		// rejectNodePatch fails every Node patch with this error.
		rejectNodePatch error
		want            []string
		wantKubelet     bool
	}{
		{
			name:        "no node registered",
			want:        []string{"no Node with that providerID registered within 15m0s"},
			wantKubelet: true,
		},
		{
			name:  "two nodes share the provider id",
			nodes: []string{"node-a", "node-b"},
			want:  []string{"more than one Node has its providerID", "node-a, node-b", "Delete the extra Node objects"},
		},
		{
			name:  "node patch rejected by a webhook",
			nodes: []string{"node-a"},
			rejectNodePatch: apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-a",
				errorString(`admission webhook "nodes.example.com" denied the request`)),
			want: []string{"could not take the Node over within 15m0s", "node-a", `admission webhook "nodes.example.com" denied the request`, "webhook", "auth can-i patch nodes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnitWith(t, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*corev1.Node); ok && tc.rejectNodePatch != nil {
						return tc.rejectNodePatch
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
			nc := u.launch(testNodeClaim("timeout"))
			for _, name := range tc.nodes {
				u.create(registeringNode(name, nc.Status.ProviderID, "amd64"))
			}
			_, _ = u.ctrl.Reconcile(u.ctx, requestFor("timeout"))
			u.clock.Step(16 * time.Minute)
			_, _ = u.ctrl.Reconcile(u.ctx, requestFor("timeout"))
			if !u.deleted("timeout") {
				t.Fatalf("a NodeClaim not registered within its TTL is deleted")
			}
			msg := u.event(events.RegistrationTimeout).Message
			contains(t, msg, tc.want...)
			for _, g := range kubeletGuidance {
				if got := strings.Contains(msg, g); got != tc.wantKubelet {
					t.Errorf("mentions %q: %v, want %v: %s", g, got, tc.wantKubelet, msg)
				}
			}
		})
	}
}
