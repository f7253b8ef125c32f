package sim

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

func TestNodeClassStatus(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*simv1alpha1.SimNodeClass)
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
	}{
		{name: "default is ready", wantStatus: metav1.ConditionTrue, wantReason: ReasonNodeClassReady},
		{name: "unknown family", mutate: func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Catalog.InstanceFamilies = []string{"zz9"} },
			wantStatus: metav1.ConditionFalse, wantReason: ReasonCatalogInvalid, wantInMsg: "zz9"},
		{name: "unknown catalog", mutate: func(nc *simv1alpha1.SimNodeClass) { nc.Spec.Catalog.Name = "gcp-like" },
			wantStatus: metav1.ConditionFalse, wantReason: ReasonCatalogInvalid, wantInMsg: "gcp-like"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = simv1alpha1.AddToScheme(scheme)
			_ = v1.AddToScheme(scheme)
			nc := nodeClass("default")
			if tt.mutate != nil {
				tt.mutate(nc)
			}
			kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nc).WithStatusSubresource(nc).Build()
			c, err := NewNodeClassController(kube, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
				t.Fatal(err)
			}
			got := &simv1alpha1.SimNodeClass{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, simv1alpha1.ConditionTypeReady)
			if cond == nil || cond.Status != tt.wantStatus || cond.Reason != tt.wantReason || !strings.Contains(cond.Message, tt.wantInMsg) {
				t.Fatalf("Ready condition = %+v, want %s/%s mentioning %q", cond, tt.wantStatus, tt.wantReason, tt.wantInMsg)
			}
			if len(got.Status.Zones) != 3 {
				t.Errorf("status.zones = %v", got.Status.Zones)
			}
			// A launch from a Ready=False node class is refused as not ready.
			p, err := New(Options{Client: kube, Store: newEnv(t).store, ClusterName: "c"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Create(ctx, newNodeClaim("nc", "default"))
			if notReady := cloudprovider.IsNodeClassNotReadyError(err); notReady != (tt.wantStatus == metav1.ConditionFalse) {
				t.Errorf("Create = %v", err)
			}
		})
	}
}
