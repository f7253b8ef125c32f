package crdtest

import (
	"flag"
	"fmt"
	"os"
	"strings"
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
	// Only this package's CRDs: the tests must not depend on other groups.
	files, err := apis.CRDFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var crds [][]byte
	for name, b := range files {
		if strings.HasPrefix(name, "karpenter.sh_") {
			crds = append(crds, b)
		}
	}
	test.Main(m, controlplane.Options{CRDs: crds, Scheme: scheme})
}
