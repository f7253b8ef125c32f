package cloudprovider_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/fake"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

func TestInstrumentCountsCallsByErrorKind(t *testing.T) {
	cp := cloudprovider.Instrument(fake.New(), nil)
	ctx := context.Background()
	before := testutil.ToFloat64(metrics.CloudProviderCalls.WithLabelValues("Delete", "NotFound"))
	err := cp.Delete(ctx, &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "fake:///a/none"}})
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want not found passed through", err)
	}
	if got := testutil.ToFloat64(metrics.CloudProviderCalls.WithLabelValues("Delete", "NotFound")) - before; got != 1 {
		t.Errorf("counted %v Delete/NotFound calls, want 1", got)
	}
	if cp.Name() != fake.ProviderName {
		t.Errorf("Name = %q", cp.Name())
	}
}
