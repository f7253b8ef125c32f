// Package e2e checks the cluster state against a real kube-apiserver: fed
// by its informer reconcilers, it must see what the API server holds.
package e2e

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apis.AddToScheme(s)
	return s
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	test.Main(m, controlplane.Options{
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         scheme(),
	})
}

// startCluster runs a manager feeding a fresh Cluster until the test ends.
func startCluster(t *testing.T) *state.Cluster {
	t.Helper()
	env := test.Env(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := state.NewCluster(state.Options{Reader: mgr.GetAPIReader()})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cluster
}
