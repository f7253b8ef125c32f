package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Label names of the AWS SDK request metrics (Karpenter's AWS provider's).
const (
	LabelService = "service"
	LabelAction  = "action"
	// LabelNodeClass is the EC2NodeClass a metric is about.
	LabelNodeClass = "nodeclass"
)

// awsSDKNamespace is the AWS SDK metrics' prefix: Karpenter's AWS
// provider serves them without its own namespace.
const awsSDKNamespace = "aws_sdk_go"

// The AWS SDK request metrics: every call of joiner's AWS clients (EC2,
// IAM, SSM, Pricing, EKS, SQS), by service ID ("EC2"), operation
// ("DescribeSubnets") and the HTTP status of the last response ("0" when
// no response came back).
var (
	AWSSDKRequests = NewCounterVec(prometheus.CounterOpts{
		Namespace: awsSDKNamespace, Subsystem: "request", Name: "total",
		Help: "The total number of AWS SDK Go requests, by service, action and HTTP status code.",
	}, LabelService, LabelAction, LabelCode)
	AWSSDKRequestDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: awsSDKNamespace, Subsystem: "request", Name: "duration_seconds",
		Help: "Latency of AWS SDK Go requests, retries included.", Buckets: durationBuckets,
	}, LabelService, LabelAction, LabelCode)
	AWSSDKRequestRetries = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: awsSDKNamespace, Subsystem: "request", Name: "retry_count",
		Help: "The number of AWS SDK Go retry attempts per request.", Buckets: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	}, LabelService, LabelAction, LabelCode)
	AWSSDKRequestAttempts = NewCounterVec(prometheus.CounterOpts{
		Namespace: awsSDKNamespace, Subsystem: "request", Name: "attempt_total",
		Help: "The total number of AWS SDK Go request attempts, by service, action and HTTP status code.",
	}, LabelService, LabelAction, LabelCode)
	AWSSDKRequestAttemptDuration = NewHistogramVec(prometheus.HistogramOpts{
		Namespace: awsSDKNamespace, Subsystem: "request", Name: "attempt_duration_seconds",
		Help: "Latency of AWS SDK Go request attempts.", Buckets: durationBuckets,
	}, LabelService, LabelAction, LabelCode)
)

// EC2NodeClassUserDataBytes is the size of the user data joiner last
// rendered for an EC2NodeClass's launches.
var EC2NodeClassUserDataBytes = NewGaugeVec(prometheus.GaugeOpts{
	Namespace: Namespace, Subsystem: "ec2nodeclasses", Name: "userdata_bytes",
	Help: "Size in bytes of the rendered user data (raw, pre-base64) for the EC2NodeClass.",
}, LabelNodeClass)
