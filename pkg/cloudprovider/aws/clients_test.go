package aws_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	joineraws "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// TestInstrumentCountsRequestsAndAttempts calls a local AWS (moto_server,
// started here; the test fails without it) through instrumented clients
// and checks Karpenter's aws_sdk_go_request_* series: service, operation
// and HTTP status, one request and one attempt per successful call, and
// the attempts and retries of a call that never gets an answer.
func TestInstrumentCountsRequestsAndAttempts(t *testing.T) {
	ctx := context.Background()
	srv, err := localec2.Start(ctx, localec2.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	cfg := srv.Config()
	joineraws.Instrument(&cfg)

	// A port nobody listens on: every attempt is refused, so the SDK
	// retries (quickly, with a short back-off) and no status comes back.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dead := localec2.Config(refused, cfg.Region)
	dead.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.NewExponentialJitterBackoff(10 * time.Millisecond)
		})
	}
	joineraws.Instrument(&dead)

	tests := []struct {
		name                    string
		call                    func() error
		service, action, code   string
		wantErr                 bool
		attempts, retriesBucket float64
	}{
		{name: "ec2 success", service: "EC2", action: "DescribeSubnets", code: "200", attempts: 1,
			call: func() error {
				_, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
				return err
			}},
		{name: "ec2 client error", service: "EC2", action: "DescribeImages", code: "400", wantErr: true, attempts: 1,
			call: func() error {
				_, err := ec2.NewFromConfig(cfg).DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{"not-an-ami"}})
				return err
			}},
		{name: "sqs", service: "SQS", action: "CreateQueue", code: "200", attempts: 1,
			call: func() error {
				_, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("metrics")})
				return err
			}},
		{name: "no answer", service: "EC2", action: "DescribeInstances", code: "0", wantErr: true, attempts: 3, retriesBucket: 2,
			call: func() error {
				_, err := ec2.NewFromConfig(dead).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := []string{tt.service, tt.action, tt.code}
			requests := testutil.ToFloat64(metrics.AWSSDKRequests.WithLabelValues(l...))
			attempts := testutil.ToFloat64(metrics.AWSSDKRequestAttempts.WithLabelValues(l...))
			durations := sampleCount(t, metrics.AWSSDKRequestDuration.WithLabelValues(l...))
			retries := sampleSum(t, metrics.AWSSDKRequestRetries.WithLabelValues(l...))
			if err := tt.call(); (err != nil) != tt.wantErr {
				t.Fatalf("call error = %v, want error %v", err, tt.wantErr)
			}
			if got := testutil.ToFloat64(metrics.AWSSDKRequests.WithLabelValues(l...)) - requests; got != 1 {
				t.Errorf("aws_sdk_go_request_total%v grew by %v, want 1", l, got)
			}
			if got := testutil.ToFloat64(metrics.AWSSDKRequestAttempts.WithLabelValues(l...)) - attempts; got != tt.attempts {
				t.Errorf("aws_sdk_go_request_attempt_total%v grew by %v, want %v", l, got, tt.attempts)
			}
			if got := sampleCount(t, metrics.AWSSDKRequestDuration.WithLabelValues(l...)) - durations; got != 1 {
				t.Errorf("aws_sdk_go_request_duration_seconds%v observed %d requests, want 1", l, got)
			}
			if got := sampleSum(t, metrics.AWSSDKRequestRetries.WithLabelValues(l...)) - retries; got != tt.retriesBucket {
				t.Errorf("aws_sdk_go_request_retry_count%v observed %v retries, want %v", l, got, tt.retriesBucket)
			}
		})
	}
}

func histogram(t *testing.T, o prometheus.Observer) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	return histogram(t, o).GetSampleCount()
}

func sampleSum(t *testing.T, o prometheus.Observer) float64 {
	return histogram(t, o).GetSampleSum()
}
