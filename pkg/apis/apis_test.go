package apis_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/joiner-dev/joiner/pkg/apis"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// TestCRDsAreAccepted runs the apiserver's own CRD validation over every
// embedded CRD: structural schema, defaults, and the CEL rules' compilation
// and estimated cost. A rule the apiserver would refuse fails here first.
func TestCRDsAreAccepted(t *testing.T) {
	crds, err := apis.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) < 2 {
		t.Fatalf("expected at least the NodePool and NodeClaim CRDs, got %d", len(crds))
	}
	for _, crd := range crds {
		t.Run(crd.Name, func(t *testing.T) {
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
				t.Fatal(err)
			}
			// The apiserver fills storedVersions on create; validation expects it.
			for _, v := range internal.Spec.Versions {
				if v.Storage {
					internal.Status.StoredVersions = append(internal.Status.StoredVersions, v.Name)
				}
			}
			for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), internal) {
				t.Errorf("%s", e)
			}
		})
	}
}

func TestAddToSchemeRegistersKarpenterKinds(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"NodePool", "NodePoolList", "NodeClaim", "NodeClaimList"} {
		if !s.Recognizes(v1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognise %s", kind)
		}
	}
}

// TestCRDsAreFresh regenerates the CRDs with controller-gen into a temporary
// directory and compares them with the committed (embedded) ones. Run
// `make generate` when it fails.
func TestCRDsAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out := t.TempDir()
	cmd := exec.Command(goBin, "tool", "controller-gen", "crd:allowDangerousTypes=false", "paths=./pkg/apis/...", "output:crd:artifacts:config="+out)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	committed, err := apis.CRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	generated, err := filepath.Glob(filepath.Join(out, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) != len(committed) {
		t.Errorf("controller-gen produced %d CRDs, %d are committed; run make generate", len(generated), len(committed))
	}
	for _, g := range generated {
		want, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(g)
		if got, ok := committed[name]; !ok {
			t.Errorf("%s is generated but not committed; run make generate", name)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run make generate", name)
		}
	}
}

// TestCRDShape pins what kubectl users see: scope, category and printer
// columns in Karpenter's order.
func TestCRDShape(t *testing.T) {
	crds, err := apis.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"nodepools.karpenter.sh":  {"NodeClass", "Nodes", "Ready", "Age", "Weight", "CPU", "Memory"},
		"nodeclaims.karpenter.sh": {"Type", "Capacity", "Zone", "Node", "Ready", "Age", "ImageID", "ID", "NodePool", "NodeClass", "Drifted"},
	}
	for _, crd := range crds {
		columns, ok := want[crd.Name]
		if !ok {
			continue
		}
		delete(want, crd.Name)
		if crd.Spec.Scope != apiextensionsv1.ClusterScoped {
			t.Errorf("%s scope = %s, want Cluster", crd.Name, crd.Spec.Scope)
		}
		if len(crd.Spec.Names.Categories) != 1 || crd.Spec.Names.Categories[0] != "karpenter" {
			t.Errorf("%s categories = %v, want [karpenter]", crd.Name, crd.Spec.Names.Categories)
		}
		v := crd.Spec.Versions
		if len(v) != 1 || v[0].Name != "v1" || !v[0].Served || !v[0].Storage || v[0].Subresources == nil || v[0].Subresources.Status == nil {
			t.Errorf("%s: want one served, stored v1 with a status subresource", crd.Name)
			continue
		}
		var got []string
		for _, c := range v[0].AdditionalPrinterColumns {
			got = append(got, c.Name)
		}
		if strings.Join(got, ",") != strings.Join(columns, ",") {
			t.Errorf("%s printer columns = %v, want %v", crd.Name, got, columns)
		}
	}
	for name := range want {
		t.Errorf("CRD %s is not embedded", name)
	}
}
