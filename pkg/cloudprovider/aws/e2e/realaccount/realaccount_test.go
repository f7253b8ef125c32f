//go:build e2eaws

package realaccount

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
)

// TestRealAccount is `make e2e-aws`: the suite against the account the
// SDK's default credential chain and region point at (AWS_ENDPOINT_URL is
// honoured, so a local EC2 works too). It launches ONE small on-demand
// instance and terminates it.
func TestRealAccount(t *testing.T) {
	s, err := SettingsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("loading the AWS configuration: %v", err)
	}
	if _, err := cfg.Credentials.Retrieve(context.Background()); err != nil {
		t.Fatalf("no AWS credentials: %v; set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", err)
	}
	// The Pricing API lives in us-east-1; the refresher keeps the built-in
	// table when it cannot be reached (a local EC2 has none).
	s.Pricing = pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = "us-east-1" })
	Run(t, cfg, s)
}
