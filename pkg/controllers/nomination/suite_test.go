package nomination_test

import (
	"testing"

	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// The writer's tests run against a real kube-apiserver: what they prove
// is how the API server takes its JSON patches and records their manager.
func TestMain(m *testing.M) {
	test.Main(m, controlplane.Options{CRDDirectories: []string{test.RepoPath("pkg/apis/crds")}, Scheme: test.Scheme()})
}
