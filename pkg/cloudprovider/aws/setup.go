package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-dev/joiner/pkg/events"
)

// SetupOptions configure Build: Karpenter's AWS settings.
type SetupOptions struct {
	ClusterName string
	// ClusterID defaults to the kube-system namespace UID.
	ClusterID string
	// ClusterEndpoint defaults to EKS DescribeCluster's answer.
	ClusterEndpoint string
	// CABundle (base64 PEM) defaults to EKS's, else the controller's own
	// REST configuration's CA.
	CABundle                string
	SSMParameterRoot        string
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	IsolatedVPC             bool
	// NodeClassRefresh is how often node classes are resolved again (0:
	// DefaultNodeClassRefresh).
	NodeClassRefresh time.Duration
	// Recorder publishes the provider's events (a namesake cluster).
	Recorder events.Recorder
	// KubernetesVersion defaults to the API server's.
	KubernetesVersion string
	// AWSConfig defaults to the SDK's default chain (environment, shared
	// files, IMDS; AWS_REGION and AWS_ENDPOINT_URL honoured).
	AWSConfig *aws.Config
	// UserData defaults to the userdata package.
	UserData UserDataFunc
	Clock    clock.WithTicker
}

// Cloud is the AWS provider and what runs beside it.
type Cloud struct {
	Provider    *Provider
	NodeClasses *NodeClassController
	Pricing     *PricingRefresher
	// Config is the AWS configuration the provider uses, for the
	// controllers beside it (interruption's SQS client).
	Config aws.Config
}

// GenerateUserData is the userdata package's generator in the provider's
// terms.
func GenerateUserData(o UserDataOptions) (string, error) {
	return userdata.Generate(userdata.Options(o))
}

// Build makes the AWS provider for mgr's cluster without registering
// anything.
func Build(ctx context.Context, mgr manager.Manager, opts SetupOptions) (*Cloud, error) {
	cfg := opts.AWSConfig
	if cfg == nil {
		c, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("setting up the aws cloud provider: loading the AWS configuration: %w", err)
		}
		cfg = &c
	}
	if cfg.Region == "" {
		return nil, errors.New("setting up the aws cloud provider: no AWS region; set AWS_REGION")
	}
	instrumented := cfg.Copy()
	Instrument(&instrumented)
	cfg = &instrumented
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if opts.ClusterID == "" {
		id, err := sim.ClusterID(ctx, mgr.GetAPIReader())
		if err != nil {
			return nil, fmt.Errorf("setting up the aws cloud provider: %w", err)
		}
		opts.ClusterID = id
	}
	if opts.KubernetesVersion == "" {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("setting up the aws cloud provider: %w", err)
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return nil, fmt.Errorf("setting up the aws cloud provider: reading the Kubernetes version: %w", err)
		}
		opts.KubernetesVersion = strings.TrimSuffix(v.Major, "+") + "." + strings.TrimSuffix(v.Minor, "+")
	}
	var clusterCIDR string
	if opts.ClusterEndpoint == "" {
		out, err := eks.NewFromConfig(*cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(opts.ClusterName)})
		if err != nil {
			return nil, fmt.Errorf("setting up the aws cloud provider: no CLUSTER_ENDPOINT set and EKS DescribeCluster %s failed; set --cluster-endpoint: %w", opts.ClusterName, err)
		}
		opts.ClusterEndpoint = aws.ToString(out.Cluster.Endpoint)
		if opts.CABundle == "" && out.Cluster.CertificateAuthority != nil {
			opts.CABundle = aws.ToString(out.Cluster.CertificateAuthority.Data)
		}
		if n := out.Cluster.KubernetesNetworkConfig; n != nil {
			clusterCIDR = aws.ToString(n.ServiceIpv4Cidr)
		}
	}
	if opts.CABundle == "" && len(mgr.GetConfig().CAData) > 0 {
		opts.CABundle = base64.StdEncoding.EncodeToString(mgr.GetConfig().CAData)
	}
	if opts.UserData == nil {
		opts.UserData = GenerateUserData
	}
	var clk clock.WithTicker = clock.RealClock{}
	if opts.Clock != nil {
		clk = opts.Clock
	}
	// The Pricing API lives in us-east-1 (ap-south-1 for some partitions).
	pricingClient := pricing.NewFromConfig(*cfg, func(o *pricing.Options) {
		if !strings.HasPrefix(cfg.Region, "cn-") {
			o.Region = "us-east-1"
		}
	})
	p, err := New(Options{
		EC2: ec2.NewFromConfig(*cfg), IAM: iam.NewFromConfig(*cfg), SSM: ssm.NewFromConfig(*cfg), Pricing: pricingClient,
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Region: cfg.Region,
		ClusterName: opts.ClusterName, ClusterID: opts.ClusterID,
		ClusterEndpoint: opts.ClusterEndpoint, CABundle: opts.CABundle, ClusterCIDR: clusterCIDR,
		KubernetesVersion: opts.KubernetesVersion, SSMParameterRoot: opts.SSMParameterRoot,
		VMMemoryOverheadPercent: opts.VMMemoryOverheadPercent, ReservedENIs: opts.ReservedENIs, IsolatedVPC: opts.IsolatedVPC,
		UserData: opts.UserData, Clock: clk, NodeClassRefresh: opts.NodeClassRefresh, Recorder: opts.Recorder,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the aws cloud provider: %w", err)
	}
	return &Cloud{Provider: p, NodeClasses: p.NodeClassController(), Pricing: p.PricingRefresher(), Config: *cfg}, nil
}
