package crdtest

import (
	"flag"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestMain starts a real kube-apiserver with only the SimNodeClass CRD
// installed, so the schema, defaults and CEL rules under test are the API
// server's own.
func TestMain(m *testing.M) {
	flag.Parse()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		panic(err)
	}
	// Only this group's CRD: the package tests its own schema and rules.
	files, err := apis.CRDFiles()
	if err != nil {
		panic(err)
	}
	var crds [][]byte
	for name, b := range files {
		if strings.HasPrefix(name, "sim.joiner.dev_") {
			crds = append(crds, b)
		}
	}
	test.Main(m, controlplane.Options{CRDs: crds, Scheme: scheme})
}
