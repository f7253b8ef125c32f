package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
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
	CABundle string
	// ClusterCIDR is the cluster's service CIDR (IPv4 or IPv6), which
	// AL2023's nodeadm requires; it defaults to EKS DescribeCluster's
	// answer, and Build fails naming the setting when neither gives it.
	ClusterCIDR             string
	SSMParameterRoot        string
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	IsolatedVPC             bool
	// IgnoreReservedCapacity: the ReservedCapacity gate is off.
	IgnoreReservedCapacity bool
	// NodeClassRefresh is how often node classes are resolved again (0:
	// DefaultNodeClassRefresh).
	NodeClassRefresh time.Duration
	// UnavailableOfferingsTTL is how long an offering that failed for
	// lack of capacity is skipped (0: cloudprovider.DefaultUnavailableOfferingsTTL).
	UnavailableOfferingsTTL time.Duration
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
		id, err := identity.ClusterID(ctx, mgr.GetAPIReader())
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
	if err := resolveCluster(ctx, eks.NewFromConfig(*cfg), &opts); err != nil {
		return nil, fmt.Errorf("setting up the aws cloud provider: %w", err)
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
		EC2: ec2.NewFromConfig(*cfg), IAM: iam.NewFromConfig(*cfg), SSM: ssm.NewFromConfig(*cfg), Pricing: pricingClient, EKS: eks.NewFromConfig(*cfg),
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Region: cfg.Region,
		ClusterName: opts.ClusterName, ClusterID: opts.ClusterID,
		ClusterEndpoint: opts.ClusterEndpoint, CABundle: opts.CABundle, ClusterCIDR: opts.ClusterCIDR,
		KubernetesVersion: opts.KubernetesVersion, SSMParameterRoot: opts.SSMParameterRoot,
		VMMemoryOverheadPercent: opts.VMMemoryOverheadPercent, ReservedENIs: opts.ReservedENIs, IsolatedVPC: opts.IsolatedVPC,
		IgnoreReservedCapacity: opts.IgnoreReservedCapacity,
		UserData:               opts.UserData, Clock: clk, NodeClassRefresh: opts.NodeClassRefresh, Recorder: opts.Recorder,
		UnavailableOfferingsTTL: opts.UnavailableOfferingsTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the aws cloud provider: %w", err)
	}
	return &Cloud{Provider: p, NodeClasses: p.NodeClassController(), Pricing: p.PricingRefresher(), Config: *cfg}, nil
}

// ClusterDescriber is the EKS call resolveCluster makes.
type ClusterDescriber interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// resolveCluster fills the cluster endpoint, CA bundle and service CIDR
// the settings leave empty from EKS DescribeCluster, as Karpenter does at
// start-up (it asks EKS for the CIDR even when CLUSTER_ENDPOINT is set).
// An IPv6 cluster's CIDR is its serviceIpv6Cidr. Without the endpoint or
// the CIDR it fails naming the setting that would give it: an AL2023
// node's nodeadm refuses a NodeConfig without spec.cluster.cidr, so no
// AL2023 node could join.
func resolveCluster(ctx context.Context, api ClusterDescriber, opts *SetupOptions) error {
	if opts.ClusterCIDR != "" {
		if _, _, err := net.ParseCIDR(opts.ClusterCIDR); err != nil {
			return fmt.Errorf("cluster-cidr (CLUSTER_CIDR) %q is not a CIDR such as 10.100.0.0/16 or fd30:1c53:5f8a::/108: %w", opts.ClusterCIDR, err)
		}
		if opts.ClusterEndpoint != "" {
			return nil
		}
	}
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(opts.ClusterName)})
	if err != nil {
		if opts.ClusterEndpoint == "" {
			return fmt.Errorf("no CLUSTER_ENDPOINT set and EKS DescribeCluster %s failed; set --cluster-endpoint (CLUSTER_ENDPOINT) and --cluster-cidr (CLUSTER_CIDR): %w", opts.ClusterName, err)
		}
		return fmt.Errorf("the cluster's service CIDR is unknown: EKS DescribeCluster %s failed; set --cluster-cidr (CLUSTER_CIDR) to the cluster's service CIDR (the kubernetes Service's ClusterIP lies in it), which AL2023 nodes' nodeadm requires: %w", opts.ClusterName, err)
	}
	c := out.Cluster
	if c == nil {
		return fmt.Errorf("EKS DescribeCluster %s answered no cluster; set --cluster-endpoint (CLUSTER_ENDPOINT) and --cluster-cidr (CLUSTER_CIDR)", opts.ClusterName)
	}
	if opts.ClusterEndpoint == "" {
		opts.ClusterEndpoint = aws.ToString(c.Endpoint)
	}
	if opts.CABundle == "" && c.CertificateAuthority != nil {
		opts.CABundle = aws.ToString(c.CertificateAuthority.Data)
	}
	if opts.ClusterCIDR == "" && c.KubernetesNetworkConfig != nil {
		n := c.KubernetesNetworkConfig
		if n.IpFamily == ekstypes.IpFamilyIpv6 {
			opts.ClusterCIDR = aws.ToString(n.ServiceIpv6Cidr)
		} else {
			opts.ClusterCIDR = aws.ToString(n.ServiceIpv4Cidr)
		}
	}
	switch {
	case opts.ClusterEndpoint == "":
		return fmt.Errorf("EKS DescribeCluster %s answered no endpoint; set --cluster-endpoint (CLUSTER_ENDPOINT)", opts.ClusterName)
	case opts.ClusterCIDR == "":
		return fmt.Errorf("EKS DescribeCluster %s answered no service CIDR; set --cluster-cidr (CLUSTER_CIDR) to the cluster's service CIDR, which AL2023 nodes' nodeadm requires", opts.ClusterName)
	}
	return nil
}
