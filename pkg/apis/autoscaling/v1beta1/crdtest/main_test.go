// Package crdtest checks the CapacityBuffer CRD's validation and defaults
// on a real kube-apiserver.
package crdtest

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/joiner-dev/joiner/pkg/apis"
	"github.com/joiner-dev/joiner/pkg/controlplane"
	"github.com/joiner-dev/joiner/pkg/test"
)

func TestMain(m *testing.M) {
	flag.Parse()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		panic(err)
	}
	files, err := apis.CRDFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crd, ok := files["autoscaling.x-k8s.io_capacitybuffers.yaml"]
	if !ok {
		fmt.Fprintln(os.Stderr, "no CapacityBuffer CRD among the embedded CRDs")
		os.Exit(1)
	}
	test.Main(m, controlplane.Options{CRDs: [][]byte{crd}, Scheme: scheme})
}
