package e2e

import (
	"context"
	"testing"
)

// BenchmarkInstanceTypeDiscovery is a cold start: a new provider lists the
// region's whole catalog from the local EC2 (DescribeInstanceTypes,
// DescribeInstanceTypeOfferings in every zone, spot prices) and computes a
// node class's instance types from it.
func BenchmarkInstanceTypeDiscovery(b *testing.B) {
	ctx := context.Background()
	nc := readyNodeClass(b, newProvider(b, "bench"), nodeClass(b))
	b.ReportAllocs()
	b.ResetTimer()
	var types, offerings int
	for b.Loop() {
		its, err := newProvider(b, "bench").GetInstanceTypes(ctx, nodePool(nc))
		if err != nil || len(its) < 500 {
			b.Fatalf("%d instance types, %v", len(its), err)
		}
		types, offerings = len(its), 0
		for _, it := range its {
			offerings += len(it.Offerings)
		}
	}
	b.ReportMetric(float64(types), "types")
	b.ReportMetric(float64(offerings), "offerings")
}

// BenchmarkInstanceTypesCached is the steady state: GetInstanceTypes with
// the catalog and the node class's computed types cached (availability is
// applied on each call).
func BenchmarkInstanceTypesCached(b *testing.B) {
	ctx := context.Background()
	p := newProvider(b, "bench")
	nc := readyNodeClass(b, p, nodeClass(b))
	if _, err := p.GetInstanceTypes(ctx, nodePool(nc)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.GetInstanceTypes(ctx, nodePool(nc)); err != nil {
			b.Fatal(err)
		}
	}
}
