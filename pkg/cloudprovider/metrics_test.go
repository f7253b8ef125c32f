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

func TestInstrumentCountsErrorsByControllerAndKind(t *testing.T) {
	cp := cloudprovider.Instrument(fake.New(), nil)
	ctx := metrics.WithController(context.Background(), "nodeclaim.termination")
	errors := metrics.CloudProviderErrors.WithLabelValues("nodeclaim.termination", "Delete", fake.ProviderName, "NotFound")
	before := testutil.ToFloat64(errors)
	err := cp.Delete(ctx, &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "fake:///a/none"}})
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want not found passed through", err)
	}
	if got := testutil.ToFloat64(errors) - before; got != 1 {
		t.Errorf("counted %v Delete/NotFound errors, want 1", got)
	}
	if n := testutil.CollectAndCount(metrics.CloudProviderDuration, "karpenter_cloudprovider_duration_seconds"); n == 0 {
		t.Error("no karpenter_cloudprovider_duration_seconds series")
	}
	if cp.Name() != fake.ProviderName {
		t.Errorf("Name = %q", cp.Name())
	}
}
