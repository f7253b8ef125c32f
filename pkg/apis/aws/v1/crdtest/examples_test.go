package crdtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// TestExamplesApply creates every EC2NodeClass under examples/nodeclasses
// with strict field validation (a misspelt field fails), checks the AMI
// family each resolves to and that Validate finds nothing to report.
func TestExamplesApply(t *testing.T) {
	wantFamily := map[string]string{
		"ec2-al2023-nodeadm.yaml":       awsv1.AMIFamilyAL2023,
		"ec2-al2023-efa.yaml":           awsv1.AMIFamilyAL2023,
		"ec2-al2.yaml":                  awsv1.AMIFamilyAL2,
		"ec2-al2-custom-bootstrap.yaml": awsv1.AMIFamilyCustom,
		"ec2-windows2022.yaml":          awsv1.AMIFamilyWindows2022,
		"ec2-bottlerocket.yaml":         awsv1.AMIFamilyBottlerocket,
	}
	files, err := filepath.Glob(test.RepoPath("examples/nodeclasses/ec2-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(wantFamily) {
		t.Errorf("found %d EC2NodeClass examples, the test knows %d: update wantFamily", len(files), len(wantFamily))
	}
	env := test.Env(t)
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.UnmarshalStrict(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != "EC2NodeClass" {
				t.Fatalf("kind %q, want EC2NodeClass", u.GetKind())
			}
			u.SetName(test.Name(t, u.GetName()))
			if err := env.Client.Create(t.Context(), u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("the API server rejected the example: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
			got := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			if want, ok := wantFamily[base]; ok && got.AMIFamily() != want {
				t.Errorf("AMIFamily() = %q, want %q", got.AMIFamily(), want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v, want the example valid", err)
			}
		})
	}
}
