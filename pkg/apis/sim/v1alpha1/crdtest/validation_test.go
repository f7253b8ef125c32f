package crdtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	simv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/sim/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// createSimNodeClass creates a SimNodeClass named for t from spec (YAML),
// deleting it when t ends, and returns the API server's error.
func createSimNodeClass(t *testing.T, spec string, opts ...client.CreateOption) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.UnmarshalStrict([]byte("spec:\n"+indent(spec)), &u.Object); err != nil {
		t.Fatalf("test spec is not YAML: %v", err)
	}
	u.SetAPIVersion(simv1alpha1.SchemeGroupVersion.String())
	u.SetKind("SimNodeClass")
	u.SetName(test.Name(t, "simnc"))
	c := test.Env(t).Client
	err := c.Create(t.Context(), u, opts...)
	if err == nil {
		t.Cleanup(func() { _ = c.Delete(context.Background(), u) })
	}
	return u, err
}

func indent(s string) string {
	if strings.TrimSpace(s) == "" {
		return "  {}\n"
	}
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestSimNodeClassRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want []string
	}{
		{name: "no zones", spec: "zones: []", want: []string{"spec.zones: at least one zone is required"}},
		{name: "image version with a space", spec: "imageVersion: v1 beta", want: []string{`spec.imageVersion: "v1 beta" is not a valid image version`}},
		{name: "duplicate zones", spec: "zones: [sim-east-1a, sim-east-1a]", want: []string{"spec.zones: zones must be unique"}},
		{
			name: "zone outside the region",
			spec: "zones: [sim-east-1a, sim-west-2a]",
			want: []string{"spec.zones: every zone must start with the region name"},
		},
		{
			name: "other region with the default zones",
			spec: "region: sim-west-2",
			want: []string{"spec.zones: every zone must start with the region name", "set zones explicitly"},
		},
		{name: "malformed zone", spec: "zones: [Sim_East_1a]", want: []string{"spec.zones[0]", "should match"}},
		{
			name: "too many zones",
			spec: "zones: [sim-east-1a, sim-east-1b, sim-east-1c, sim-east-1d, sim-east-1e, sim-east-1f, sim-east-1g, sim-east-1h, sim-east-1i, sim-east-1j, sim-east-1k, sim-east-1l, sim-east-1m, sim-east-1n, sim-east-1o, sim-east-1p, sim-east-1q]",
			want: []string{"spec.zones", "must have at most 16 items"},
		},
		{name: "malformed region", spec: "region: Sim East", want: []string{"spec.region", "should match"}},
		{name: "launch delay in words", spec: "launchDelay: 2 seconds", want: []string{"spec.launchDelay", "should match"}},
		{name: "launch delay over an hour", spec: "launchDelay: 2h", want: []string{"spec.launchDelay: must be at most 1h"}},
		{name: "negative registration delay", spec: "registrationDelay: -1s", want: []string{"spec.registrationDelay", "should match"}},
		{name: "registration delay over an hour", spec: "registrationDelay: 61m", want: []string{"spec.registrationDelay: must be at most 1h"}},
		{name: "empty catalog name", spec: "catalog: {name: ''}", want: []string{"spec.catalog.name", "at least 1 chars long"}},
		{name: "duplicate instance family", spec: "catalog: {instanceFamilies: [m5, m5]}", want: []string{"spec.catalog.instanceFamilies[1]", "Duplicate value"}},
		{name: "empty tag key", spec: "tags: {'': x}", want: []string{"spec.tags: empty tag keys are not supported"}},
		{
			name: "exhausted zone outside spec.zones",
			spec: "faults: {subnetIPExhaustedZones: [sim-east-1d]}",
			want: []string{"spec.faults.subnetIPExhaustedZones: every zone must be one of spec.zones"},
		},
		{
			name: "insufficient capacity in a zone outside spec.zones",
			spec: "faults: {insufficientCapacity: [{zone: sim-east-1z}]}",
			want: []string{"spec.faults.insufficientCapacity[].zone: must be one of spec.zones"},
		},
		{
			name: "unknown capacity type",
			spec: "faults: {insufficientCapacity: [{capacityType: preemptible}]}",
			want: []string{"spec.faults.insufficientCapacity[0].capacityType", "Unsupported value: \"preemptible\""},
		},
		{
			name: "never register with registration faults",
			spec: "faults: {neverRegister: true, dropStartupTaints: true}",
			want: []string{"spec.faults.neverRegister: no Node ever registers"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createSimNodeClass(t, tc.spec)
			if err == nil {
				t.Fatalf("the API server accepted the object; want it rejected with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestSimNodeClassDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want simv1alpha1.SimNodeClassSpec
	}{
		{
			name: "empty spec",
			want: simv1alpha1.SimNodeClassSpec{
				Region:            "sim-east-1",
				Zones:             []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"},
				Catalog:           simv1alpha1.Catalog{Name: "aws-like"},
				LaunchDelay:       metav1.Duration{Duration: 2 * time.Second},
				RegistrationDelay: metav1.Duration{Duration: time.Second},
			},
		},
		{
			name: "catalog families without a name",
			spec: "catalog: {instanceFamilies: [m5]}\nlaunchDelay: 500ms",
			want: simv1alpha1.SimNodeClassSpec{
				Region:            "sim-east-1",
				Zones:             []string{"sim-east-1a", "sim-east-1b", "sim-east-1c"},
				Catalog:           simv1alpha1.Catalog{Name: "aws-like", InstanceFamilies: []string{"m5"}},
				LaunchDelay:       metav1.Duration{Duration: 500 * time.Millisecond},
				RegistrationDelay: metav1.Duration{Duration: time.Second},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := createSimNodeClass(t, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := &simv1alpha1.SimNodeClass{}
			if err := test.Env(t).Client.Get(t.Context(), client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			s := got.Spec
			if s.Region != tc.want.Region || !slices.Equal(s.Zones, tc.want.Zones) || s.Catalog.Name != tc.want.Catalog.Name ||
				!slices.Equal(s.Catalog.InstanceFamilies, tc.want.Catalog.InstanceFamilies) ||
				s.LaunchDelay != tc.want.LaunchDelay || s.RegistrationDelay != tc.want.RegistrationDelay || s.Faults != nil {
				t.Errorf("stored spec = %+v,\nwant %+v", s, tc.want)
			}
			// The Go defaults agree with the API server's.
			local := &simv1alpha1.SimNodeClass{}
			local.Spec.Catalog.InstanceFamilies = tc.want.Catalog.InstanceFamilies
			local.Spec.LaunchDelay = tc.want.LaunchDelay
			local.ApplyDefaults()
			if local.Spec.Region != s.Region || !slices.Equal(local.Spec.Zones, s.Zones) || local.Spec.Catalog.Name != s.Catalog.Name ||
				local.Spec.LaunchDelay != s.LaunchDelay || local.Spec.RegistrationDelay != s.RegistrationDelay {
				t.Errorf("ApplyDefaults() = %+v, the API server stored %+v", local.Spec, s)
			}
		})
	}
}

// TestExamplesApply creates every SimNodeClass under examples/nodeclasses
// with strict field validation.
func TestExamplesApply(t *testing.T) {
	files, err := filepath.Glob(test.RepoPath("examples/nodeclasses/sim-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 7 {
		t.Fatalf("found %d SimNodeClass examples, want the default one and one per fault switch", len(files))
	}
	env := test.Env(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.UnmarshalStrict(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			if u.GetKind() != "SimNodeClass" {
				t.Fatalf("kind %q, want SimNodeClass", u.GetKind())
			}
			u.SetName(test.Name(t, u.GetName()))
			if err := env.Client.Create(t.Context(), u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("the API server rejected the example: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
			got := &simv1alpha1.SimNodeClass{}
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(filepath.Base(f), "sim-fault-") && got.Spec.Faults == nil {
				t.Error("a fault example sets no fault")
			}
		})
	}
}
