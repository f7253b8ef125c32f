package crdtest

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/test"
)

// al2023Kubelet is a kubelet block a Karpenter user on AL2023 might have:
// the typed fields joiner reads next to KubeletConfiguration fields it only
// passes on to nodeadm.
func al2023Kubelet() map[string]any {
	return map[string]any{
		"maxPods":               int64(110),
		"systemReserved":        map[string]any{"cpu": "100m", "memory": "100Mi"},
		"cpuCFSQuotaPeriod":     "100ms",
		"topologyManagerPolicy": "single-numa-node",
		"cpuManagerPolicy":      "static",
		"shutdownGracePeriod":   "30s",
		"containerLogMaxSize":   "50Mi",
		"registryPullQPS":       int64(10),
		"allowedUnsafeSysctls":  []any{"net.core.somaxconn", "kernel.msg*"},
		"featureGates":          map[string]any{"InPlacePodVerticalScaling": true},
		"reservedSystemCPUs":    "0-1",
	}
}

// getKubelet reads spec.kubelet back as the API server stores it.
func getKubelet(t *testing.T, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(awsv1.SchemeGroupVersion.String())
	u.SetKind("EC2NodeClass")
	if err := test.Env(t).Client.Get(t.Context(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatal(err)
	}
	k, _, err := unstructured.NestedMap(u.Object, "spec", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKubeletExtraFieldsRoundTrip applies an AL2023 kubelet with
// KubeletConfiguration fields joiner does not type, under strict field
// validation, and checks they survive the API server and a read-modify-write
// through the Go type unchanged.
func TestKubeletExtraFieldsRoundTrip(t *testing.T) {
	env := test.Env(t)
	nc := newEC2NodeClass(t)
	u := toUnstructured(t, nc)
	if err := unstructured.SetNestedMap(u.Object, al2023Kubelet(), "spec", "kubelet"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("the API server rejected an AL2023 kubelet with extra fields: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })

	if got := getKubelet(t, nc.Name); !reflect.DeepEqual(got, al2023Kubelet()) {
		t.Fatalf("stored spec.kubelet differs from the applied one:\n got  %v\n want %v", got, al2023Kubelet())
	}

	typed := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), typed); err != nil {
		t.Fatal(err)
	}
	k := typed.Spec.Kubelet
	if k == nil || k.MaxPods == nil || *k.MaxPods != 110 || k.SystemReserved["cpu"] != "100m" {
		t.Fatalf("typed kubelet fields = %+v, want maxPods 110 and systemReserved cpu 100m", k)
	}
	wantExtra := []string{
		"allowedUnsafeSysctls", "containerLogMaxSize", "cpuCFSQuotaPeriod", "cpuManagerPolicy", "featureGates",
		"registryPullQPS", "reservedSystemCPUs", "shutdownGracePeriod", "topologyManagerPolicy",
	}
	if got := k.ExtraFieldNames(); !reflect.DeepEqual(got, wantExtra) {
		t.Fatalf("Extra fields = %v, want %v", got, wantExtra)
	}
	if err := typed.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil on AL2023", err)
	}

	// Write the object back through the Go type: nothing may be lost.
	typed.Spec.Tags = map[string]string{"team": "a"}
	if err := env.Client.Update(t.Context(), typed, client.FieldValidation("Strict")); err != nil {
		t.Fatal(err)
	}
	if got := getKubelet(t, nc.Name); !reflect.DeepEqual(got, al2023Kubelet()) {
		t.Fatalf("spec.kubelet changed after an update through the Go type:\n got  %v\n want %v", got, al2023Kubelet())
	}
}

// TestKubeletExtraFieldsOutsideAL2023 shows why Validate exists: CEL cannot
// see fields the schema does not declare, so the API server accepts extra
// kubelet fields on AL2, and Validate is what reports them.
func TestKubeletExtraFieldsOutsideAL2023(t *testing.T) {
	env := test.Env(t)
	nc := newEC2NodeClass(t)
	nc.Spec.AMISelectorTerms[0].Alias = "al2@latest"
	u := toUnstructured(t, nc)
	if err := unstructured.SetNestedMap(u.Object, al2023Kubelet(), "spec", "kubelet"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), u) })
	got := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	err := got.Validate()
	if err == nil {
		t.Fatal("Validate() = nil for extra kubelet fields on AL2")
	}
	for _, want := range []string{"cpuManagerPolicy", "can only be passed to the kubelet on AL2023", "amiFamily AL2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v\nwant it to mention %q", err, want)
		}
	}
}

// TestKubeletExtraFieldsFromGo creates an EC2NodeClass whose extra kubelet
// fields were set in Go, as a controller or a test fixture would.
func TestKubeletExtraFieldsFromGo(t *testing.T) {
	env := test.Env(t)
	nc := newEC2NodeClass(t)
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](50)}
	if err := nc.Spec.Kubelet.UnmarshalJSON([]byte(`{"maxPods":50,"cpuManagerPolicy":"static","kubeAPIQPS":50}`)); err != nil {
		t.Fatal(err)
	}
	env.Create(t, nc)
	want := map[string]any{"maxPods": int64(50), "cpuManagerPolicy": "static", "kubeAPIQPS": int64(50)}
	if got := getKubelet(t, nc.Name); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored spec.kubelet = %v, want %v", got, want)
	}
}
