package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-dev/joiner/pkg/controllerview"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestControllerViewIsPublished: the running controller publishes what its
// cloud provider gave the provisioner for each NodePool, and its TTLs, in
// the ConfigMap `joiner explain` reads (one source for both).
func TestControllerViewIsPublished(t *testing.T) {
	s := newScenario(t)
	s.apply()
	s.joiner("--registration-ttl=7m")
	var view controllerview.View
	err := test.Poll(t.Context(), 60*time.Second, func(ctx context.Context) error {
		cm := &corev1.ConfigMap{}
		if err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: controllerview.Name(s.clusterName)}, cm); err != nil {
			return err
		}
		v, ok, err := controllerview.Decode(cm)
		if err != nil || !ok {
			return fmt.Errorf("decoding: ok=%v err=%v", ok, err)
		}
		if len(v.NodePools[s.nodePool.Name].InstanceTypes) == 0 {
			return fmt.Errorf("nodepool %s has no instance types yet (%q)", s.nodePool.Name, v.NodePools[s.nodePool.Name].Error)
		}
		view = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if view.ClusterName != s.clusterName || view.RegistrationTTL.Duration != 7*time.Minute || view.InitializationTTL.Duration <= 0 {
		t.Errorf("view %s: registration TTL %s, initialization TTL %s; want cluster %s, 7m", view.ClusterName, view.RegistrationTTL.Duration, view.InitializationTTL.Duration, s.clusterName)
	}
}
