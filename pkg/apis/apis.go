// Package apis gathers joiner's API groups: it registers every group's types
// in a scheme and embeds the generated CRD manifests for installers.
//
// The CRDs are generated from the types by controller-gen (make generate)
// into crds/; a test fails when the committed files are stale.
package apis

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
)

//go:embed crds/*.yaml
var crdFS embed.FS

var schemeBuilder = runtime.NewSchemeBuilder(
	v1.AddToScheme,
	awsv1.AddToScheme,
	simv1alpha1.AddToScheme,
	kwokv1alpha1.AddToScheme,
	v1alpha1.AddToScheme,
	autoscalingv1.AddToScheme,
	autoscalingv1beta1.AddToScheme,
)

// AddToScheme registers every joiner API group.
var AddToScheme = schemeBuilder.AddToScheme

// CRDFiles returns the embedded CRD manifests by file name, sorted.
func CRDFiles() (map[string][]byte, error) {
	names, err := fs.Glob(crdFS, "crds/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := crdFS.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", n, err)
		}
		out[n[len("crds/"):]] = b
	}
	return out, nil
}

// CRDs decodes the embedded CRD manifests, ordered by name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := CRDFiles()
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for name, b := range files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
