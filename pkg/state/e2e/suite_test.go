// Package e2e checks the cluster state against a real kube-apiserver: fed
// by its informer reconcilers, it must see what the API server holds.
package e2e

import (
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/state"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	test.Main(m, controlplane.Options{
		CRDDirectories: []string{test.RepoPath("pkg/apis/crds")},
		Scheme:         test.Scheme(),
	})
}

// startCluster runs a manager feeding a fresh Cluster until the test ends.
func startCluster(t *testing.T) *state.Cluster {
	t.Helper()
	cluster, _ := startClusterManager(t)
	return cluster
}

// startClusterManager is startCluster, also returning the manager (whose
// cache the Cluster's objects come from).
func startClusterManager(t *testing.T) (*state.Cluster, manager.Manager) {
	t.Helper()
	env := test.Env(t)
	mgr := env.NewManager(t)
	cluster, err := state.NewCluster(state.Options{Reader: mgr.GetAPIReader()})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Register(mgr); err != nil {
		t.Fatal(err)
	}
	test.StartManager(t, mgr)
	return cluster, mgr
}
