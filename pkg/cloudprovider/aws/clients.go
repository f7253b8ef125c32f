package aws

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/joiner-dev/joiner/pkg/metrics"
)

// The provider depends only on the SDK methods it calls: these interfaces
// are satisfied by the SDK's clients and by small fakes in unit tests.

// EC2API is the part of EC2 the provider uses.
type EC2API interface {
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	DescribeCapacityReservations(context.Context, *ec2.DescribeCapacityReservationsInput, ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	DescribePlacementGroups(context.Context, *ec2.DescribePlacementGroupsInput, ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// IAMAPI is the part of IAM the provider uses (instance profiles of
// EC2NodeClasses that name a role).
type IAMAPI interface {
	GetRole(context.Context, *iam.GetRoleInput, ...func(*iam.Options)) (*iam.GetRoleOutput, error)
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(context.Context, *iam.CreateInstanceProfileInput, ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	AddRoleToInstanceProfile(context.Context, *iam.AddRoleToInstanceProfileInput, ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(context.Context, *iam.RemoveRoleFromInstanceProfileInput, ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	DeleteInstanceProfile(context.Context, *iam.DeleteInstanceProfileInput, ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
}

// SSMAPI reads the public parameters behind AMI aliases and ssmParameter
// selector terms.
type SSMAPI interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// PricingAPI reads on-demand prices.
type PricingAPI interface {
	GetProducts(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

var (
	_ EC2API     = (*ec2.Client)(nil)
	_ IAMAPI     = (*iam.Client)(nil)
	_ SSMAPI     = (*ssm.Client)(nil)
	_ PricingAPI = (*pricing.Client)(nil)
)

// Instrument adds Karpenter's aws_sdk_go_request_* metrics to every
// client later built from cfg (the provider's EC2, IAM, SSM, Pricing and
// EKS clients, and interruption's SQS client), as Karpenter does with its
// SDK middleware.
func Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, addRequestMetrics)
}

// The two middlewares sit on either side of the SDK's retry loop in the
// finalize step: the outer one sees a request once, with the result of its
// last attempt and how many retries it took; the inner one sees every
// attempt.
const (
	requestMetricsID = "joiner.RequestMetrics"
	attemptMetricsID = "joiner.AttemptMetrics"
	retryID          = "Retry"
)

func addRequestMetrics(stack *middleware.Stack) error {
	request := middleware.FinalizeMiddlewareFunc(requestMetricsID, func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		start := time.Now()
		out, md, err := next.HandleFinalize(ctx, in)
		l := requestLabels(ctx, md, err)
		metrics.AWSSDKRequests.WithLabelValues(l...).Inc()
		metrics.AWSSDKRequestDuration.WithLabelValues(l...).Observe(time.Since(start).Seconds())
		retries := 0
		if res, ok := retry.GetAttemptResults(md); ok && len(res.Results) > 1 {
			retries = len(res.Results) - 1
		}
		metrics.AWSSDKRequestRetries.WithLabelValues(l...).Observe(float64(retries))
		return out, md, err
	})
	attempt := middleware.FinalizeMiddlewareFunc(attemptMetricsID, func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		start := time.Now()
		out, md, err := next.HandleFinalize(ctx, in)
		l := requestLabels(ctx, md, err)
		metrics.AWSSDKRequestAttempts.WithLabelValues(l...).Inc()
		metrics.AWSSDKRequestAttemptDuration.WithLabelValues(l...).Observe(time.Since(start).Seconds())
		return out, md, err
	})
	if _, ok := stack.Finalize.Get(retryID); !ok {
		// A client without retries: every request is one attempt.
		if err := stack.Finalize.Add(request, middleware.After); err != nil {
			return err
		}
		return stack.Finalize.Add(attempt, middleware.After)
	}
	if err := stack.Finalize.Insert(request, retryID, middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(attempt, retryID, middleware.After)
}

// requestLabels are a call's service ID, operation and HTTP status ("0"
// when no response came back, such as a connection refused).
func requestLabels(ctx context.Context, md middleware.Metadata, err error) []string {
	code := 0
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		code = respErr.HTTPStatusCode()
	} else if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && raw != nil {
		code = raw.StatusCode
	}
	return []string{awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx), strconv.Itoa(code)}
}
