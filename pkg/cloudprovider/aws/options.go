package aws

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
)

// Defaults of Options.
const (
	// DefaultSSMParameterRoot is where AWS publishes the EKS AMI parameters.
	DefaultSSMParameterRoot = "/aws/service"
	// DefaultVMMemoryOverheadPercent is Karpenter's VM_MEMORY_OVERHEAD_PERCENT.
	DefaultVMMemoryOverheadPercent = 0.075
	// DefaultNodeClassRefresh is how often a Ready node class is
	// resolved again (Karpenter's AMI and subnet refresh interval).
	DefaultNodeClassRefresh = time.Minute
	// DefaultPricingRefresh is how often prices are fetched again.
	DefaultPricingRefresh = 12 * time.Hour
)

// UserDataOptions is what the launch path knows about a node when it asks
// for userData. It mirrors the userdata package's Options field for field,
// so the userdata generator plugs in by a plain conversion.
type UserDataOptions struct {
	AMIFamily                              string
	ClusterName, ClusterEndpoint, CABundle string
	ClusterCIDR                            string
	Labels                                 map[string]string
	Taints                                 []corev1.Taint
	MaxPods                                *int32
	Kubelet                                *awsv1.KubeletConfiguration
	CustomUserData                         *string
	InstanceStorePolicy                    *awsv1.InstanceStorePolicy
}

// UserDataFunc returns base64-encoded userData for a launch template.
type UserDataFunc func(UserDataOptions) (string, error)

// Options configure a Provider.
type Options struct {
	EC2     EC2API
	IAM     IAMAPI
	SSM     SSMAPI
	Pricing PricingAPI // nil: the built-in price table only
	// EKS reads the cluster's authenticationMode and access entries to
	// name an unmapped node role; nil judges by aws-auth alone.
	EKS EKSAccessAPI
	// Client reads EC2NodeClasses and NodeClaims.
	Client client.Client
	// Recorder, when set, publishes the provider's events (a namesake
	// cluster, on the node classes).
	Recorder events.Recorder
	// APIReader reads kube-system/aws-auth (ConfigMaps are not cached) to
	// name an unmapped node role while a NodeClaim waits to register; nil
	// turns that diagnosis off.
	APIReader client.Reader

	// Region is the EC2 region (from the SDK configuration).
	Region string
	// ClusterName is written as eks:eks-cluster-name on everything the
	// provider creates.
	ClusterName string
	// ClusterID is the kube-system namespace UID; when set, instances must
	// carry it too to count as this cluster's.
	ClusterID string
	// ClusterEndpoint, CABundle and ClusterCIDR go into userData.
	ClusterEndpoint, CABundle, ClusterCIDR string
	// KubernetesVersion ("1.36") picks the alias SSM parameters.
	KubernetesVersion string

	// SSMParameterRoot replaces /aws/service in alias parameter names.
	SSMParameterRoot string
	// VMMemoryOverheadPercent is subtracted from each type's memory.
	VMMemoryOverheadPercent float64
	// ReservedENIs are kept out of the ENI-limited pod count.
	ReservedENIs int
	// IsolatedVPC skips the Pricing API (no route to it).
	IsolatedVPC bool
	// IgnoreReservedCapacity is Karpenter's ReservedCapacity feature gate
	// turned off: capacity reservations are not resolved, offered or
	// launched into.
	IgnoreReservedCapacity bool

	// UserData generates launch template userData.
	UserData UserDataFunc

	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// PricingRefresh defaults to DefaultPricingRefresh.
	PricingRefresh time.Duration
	// NodeClassRefresh is how often a Ready EC2NodeClass's AMIs, subnets
	// and security groups are resolved again (Karpenter's
	// AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL: joiner resolves
	// them together, at the shorter of the two). Defaults to
	// DefaultNodeClassRefresh.
	NodeClassRefresh time.Duration
	// CreateFleetBatchIdle and CreateFleetBatchMax bound how long
	// identical launches wait to be merged (Karpenter: 35ms / 1s).
	CreateFleetBatchIdle, CreateFleetBatchMax time.Duration
	// InstanceBatchIdle and InstanceBatchMax bound how long Get, Delete
	// and drift checks wait to share a DescribeInstances or
	// TerminateInstances call (Karpenter: 100ms / 1s).
	InstanceBatchIdle, InstanceBatchMax time.Duration
	// UnavailableOfferingsTTL is how long an offering CreateFleet found
	// without capacity is skipped. Defaults to
	// cloudprovider.DefaultUnavailableOfferingsTTL.
	UnavailableOfferingsTTL time.Duration
}

func (o *Options) validate() error {
	var errs []error
	if o.EC2 == nil || o.IAM == nil || o.SSM == nil {
		errs = append(errs, errors.New("EC2, IAM and SSM clients are required"))
	}
	if o.Client == nil {
		errs = append(errs, errors.New("a Kubernetes client is required"))
	}
	if o.Region == "" {
		errs = append(errs, errors.New("region is required: set AWS_REGION or a region in the AWS configuration"))
	}
	if o.ClusterName == "" {
		errs = append(errs, errors.New("cluster name is required: it proves which instances belong to this cluster"))
	}
	if o.UserData == nil {
		errs = append(errs, errors.New("a userData generator is required"))
	}
	if o.VMMemoryOverheadPercent < 0 || o.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("vm-memory-overhead-percent %v must be in [0, 1)", o.VMMemoryOverheadPercent))
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("reserved-enis %d must not be negative", o.ReservedENIs))
	}
	if o.SSMParameterRoot == "" {
		o.SSMParameterRoot = DefaultSSMParameterRoot
	}
	if o.KubernetesVersion == "" {
		errs = append(errs, errors.New("the Kubernetes version is required to resolve AMI aliases"))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PricingRefresh == 0 {
		o.PricingRefresh = DefaultPricingRefresh
	}
	if o.NodeClassRefresh == 0 {
		o.NodeClassRefresh = DefaultNodeClassRefresh
	}
	if o.CreateFleetBatchIdle == 0 {
		o.CreateFleetBatchIdle = 35 * time.Millisecond
	}
	if o.CreateFleetBatchMax == 0 {
		o.CreateFleetBatchMax = time.Second
	}
	if o.InstanceBatchIdle == 0 {
		o.InstanceBatchIdle = 100 * time.Millisecond
	}
	if o.InstanceBatchMax == 0 {
		o.InstanceBatchMax = time.Second
	}
	switch {
	case o.UnavailableOfferingsTTL < 0:
		errs = append(errs, fmt.Errorf("unavailable-offerings-ttl %s must not be negative", o.UnavailableOfferingsTTL))
	case o.UnavailableOfferingsTTL == 0:
		o.UnavailableOfferingsTTL = cloudprovider.DefaultUnavailableOfferingsTTL
	}
	return errors.Join(errs...)
}
