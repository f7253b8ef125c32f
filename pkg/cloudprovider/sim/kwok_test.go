package sim

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/joiner-dev/joiner/pkg/apis/kwok/v1alpha1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// The kwok catalog follows Karpenter's kwok provider: its names, labels,
// capacities and prices.
func TestKWOKCatalog(t *testing.T) {
	its := kwokCatalog()
	if len(its) != 12*3*2*2 {
		t.Fatalf("%d kwok instance types, want 144", len(its))
	}
	byName := map[string]int{}
	for i, it := range its {
		byName[it.Name] = i
	}
	cases := []struct {
		name, size, family, memory, pods string
		price                            float64
	}{
		{"c-4x-amd64-linux", "4", "c", "8Gi", "64", 0.025*4 + 0.001*8*1.073741824},
		{"m-1x-arm64-linux", "1", "m", "8Gi", "16", 0.025 + 0.001*8*1.073741824},
		{"s-256x-amd64-windows", "256", "s", "1Ti", "1024", 0.025*256 + 0.001*1024*1.073741824},
	}
	for _, c := range cases {
		i, ok := byName[c.name]
		if !ok {
			t.Errorf("no instance type %s", c.name)
			continue
		}
		it := its[i]
		for key, want := range map[string]string{
			kwokv1alpha1.LabelInstanceSize:   c.size,
			kwokv1alpha1.LabelInstanceFamily: c.family,
			kwokv1alpha1.LabelInstanceCPU:    c.size,
			kwokv1alpha1.LabelInstanceMemory: c.memory,
		} {
			if got := it.Requirements[key]; len(got) != 1 || got[0] != want {
				t.Errorf("%s: %s = %v, want %s", c.name, key, got, want)
			}
		}
		if got := it.Capacity.Pods().String(); got != c.pods {
			t.Errorf("%s: pods %s, want %s", c.name, got, c.pods)
		}
		for _, o := range it.Offerings {
			want := c.price
			if o.CapacityType == v1.CapacityTypeSpot {
				want *= kwokSpotDiscount
			}
			if d := o.Price - want; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s %s %s: price %v, want %v", c.name, o.Zone, o.CapacityType, o.Price, want)
			}
		}
		if len(it.Offerings) != 8 {
			t.Errorf("%s: %d offerings, want 4 zones x 2 capacity types", c.name, len(it.Offerings))
		}
	}
}

// A NodeClaim on a KWOKNodeClass launches a kwok instance type in a kwok
// zone, labelled as the kwok provider labels its nodes.
func TestKWOKNodeClassLaunches(t *testing.T) {
	kc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	e := newEnv(t, kc)
	p, err := New(Options{Client: e.client, Store: e.store, ClusterName: "cluster-a", Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	nc := newNodeClaim("nc-1", "default",
		req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand),
		req(v1.LabelOS, corev1.NodeSelectorOpIn, "linux"),
		req(kwokv1alpha1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c"))
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KindKWOKNodeClass, Name: "default"}
	got, err := p.Create(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	// The cheapest c type that fits the NodeClaim's 1 cpu (c-1x keeps 100m
	// for the kubelet): c-2x, amd64 and arm64 cost the same, so either.
	if it := got.Labels[v1.LabelInstanceType]; it != "c-2x-amd64-linux" && it != "c-2x-arm64-linux" {
		t.Errorf("instance type %s, want c-2x-*-linux", it)
	}
	for key, want := range map[string]string{
		kwokv1alpha1.LabelInstanceFamily: "c",
		kwokv1alpha1.LabelInstanceSize:   "2",
		kwokv1alpha1.LabelInstanceMemory: "4Gi",
	} {
		if got.Labels[key] != want {
			t.Errorf("label %s = %q, want %q", key, got.Labels[key], want)
		}
	}
	if z := got.Labels[v1.LabelTopologyZone]; z != "test-zone-a" && z != "test-zone-b" && z != "test-zone-c" && z != "test-zone-d" {
		t.Errorf("zone %s is not a kwok zone", z)
	}

	nc.Name, nc.Spec.NodeClassRef.Name = "nc-2", "missing"
	var notReady *cloudprovider.NodeClassNotReadyError
	if _, err := p.Create(context.Background(), nc); !errors.As(err, &notReady) {
		t.Errorf("launch from a missing KWOKNodeClass: %v, want a NodeClassNotReadyError", err)
	}
}
