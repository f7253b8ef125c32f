// Package e2e runs the NodePool status controllers (counter, readiness)
// with cluster state against a real kube-apiserver.
package e2e

import (
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/counter"
	"github.com/joiner-dev/joiner/pkg/controllers/nodepool/readiness"
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

// start runs cluster state, nodepool.counter and nodepool.readiness in a
// manager until the test ends.
func start(t *testing.T) {
	t.Helper()
	env := test.Env(t)
	mgr := env.NewManager(t)
	cluster, err := state.NewCluster(state.Options{Reader: mgr.GetAPIReader()})
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := counter.NewController(counter.Options{Client: mgr.GetClient(), Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	rdy, err := readiness.NewController(readiness.Options{Client: mgr.GetClient(),
		NodeClasses: []client.Object{&simv1alpha1.SimNodeClass{}, &awsv1.EC2NodeClass{}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []interface{ Register(ctrl.Manager) error }{cluster, cnt, rdy} {
		if err := r.Register(mgr); err != nil {
			t.Fatal(err)
		}
	}
	test.StartManager(t, mgr)
}
