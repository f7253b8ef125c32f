package identity

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Each other cluster using this name is counted once in
// joiner_cluster_namesakes, however many of its instances are seen, and
// only its first instance asks the caller to say it.
func TestNamesakesAreCounted(t *testing.T) {
	n := &Namesakes{}
	for _, tc := range []struct {
		other, instance string
		wantFirst       bool
		wantCount       float64
	}{
		{other: "u2", instance: "i-a", wantFirst: true, wantCount: 1},
		{other: "u2", instance: "i-b", wantFirst: false, wantCount: 1},
		{other: "u3", instance: "i-c", wantFirst: true, wantCount: 2},
		{other: "u2", instance: "i-a", wantFirst: false, wantCount: 2},
	} {
		if got := n.Report(context.Background(), "c", "u1", tc.other, tc.instance); got != tc.wantFirst {
			t.Errorf("Report(%s, %s) = %v, want %v", tc.other, tc.instance, got, tc.wantFirst)
		}
		if got := testutil.ToFloat64(metrics.ClusterNamesakes); got != tc.wantCount {
			t.Errorf("after %s of %s: joiner_cluster_namesakes = %g, want %g", tc.instance, tc.other, got, tc.wantCount)
		}
	}
}
