package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// DefaultControllerSelector finds joiner's Deployment as its Helm chart
// labels it (and Karpenter's, for a cluster moving over).
const DefaultControllerSelector = "app.kubernetes.io/name in (joiner,karpenter)"

// EC2API, IAMAPI and EKSAPI are the AWS calls doctor makes: reads only.
type (
	EC2API interface {
		DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
		DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	}
	IAMAPI interface {
		GetRole(context.Context, *iam.GetRoleInput, ...func(*iam.Options)) (*iam.GetRoleOutput, error)
		GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	}
	EKSAPI = awsprovider.EKSAccessAPI
)

// AWSClients are the AWS account to read.
type AWSClients struct {
	EC2 EC2API
	IAM IAMAPI
	EKS EKSAPI
}

// Options say what Gather reads.
type Options struct {
	Kube client.Reader
	// ClusterName is settings.clusterName; ClusterID the cluster's
	// identity (kube-system's UID); ClusterEndpoint the API server.
	ClusterName, ClusterID, ClusterEndpoint string
	// ControllerSelector finds joiner's Deployments;
	// DefaultControllerSelector when nil.
	ControllerSelector labels.Selector
	// InstanceTypes lists a NodePool's instance types as the cloud
	// provider would; nil skips the instance type check.
	InstanceTypes func(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error)
	// AWS is the account; nil skips the checks that need it.
	AWS *AWSClients
}

// Gather reads the Inputs. A kind whose API is not installed (no
// EC2NodeClass CRD on a simulated cluster) is read as empty; any other
// read error fails.
func Gather(ctx context.Context, o Options) (*Inputs, error) {
	in := &Inputs{ClusterName: o.ClusterName, ClusterID: o.ClusterID, ClusterEndpoint: o.ClusterEndpoint}
	var (
		pods    corev1.PodList
		nodes   corev1.NodeList
		pvs     corev1.PersistentVolumeList
		pools   v1.NodePoolList
		claims  v1.NodeClaimList
		classes awsv1.EC2NodeClassList
		deps    appsv1.DeploymentList
	)
	sel := o.ControllerSelector
	if sel == nil {
		var err error
		if sel, err = labels.Parse(DefaultControllerSelector); err != nil {
			return nil, err
		}
	}
	for _, l := range []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"pods", &pods, nil}, {"nodes", &nodes, nil}, {"persistentvolumes", &pvs, nil},
		{"nodepools", &pools, nil}, {"nodeclaims", &claims, nil}, {"ec2nodeclasses", &classes, nil},
		{"deployments", &deps, []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}},
	} {
		if err := o.Kube.List(ctx, l.list, l.opts...); err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	in.Pods, in.Nodes, in.PersistentVolumes = pods.Items, nodes.Items, pvs.Items
	in.NodePools, in.NodeClasses, in.Controllers = pools.Items, classes.Items, deps.Items
	for _, c := range claims.Items {
		in.NodeClaims = append(in.NodeClaims, c.Name)
	}
	cm := &corev1.ConfigMap{}
	switch err := o.Kube.Get(ctx, client.ObjectKey{Namespace: bootstrap.AWSAuthNamespace, Name: bootstrap.AWSAuthName}, cm); {
	case err == nil:
		in.AWSAuth = cm
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading %s/%s: %w", bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, err)
	}
	if o.InstanceTypes != nil {
		in.InstanceTypes = map[string][]*scheduling.InstanceType{}
		in.InstanceTypeErrors = map[string]error{}
		for i := range in.NodePools {
			np := &in.NodePools[i]
			its, err := o.InstanceTypes(ctx, np)
			if err != nil {
				in.InstanceTypeErrors[np.Name] = err
				continue
			}
			in.InstanceTypes[np.Name] = its
		}
	}
	if o.AWS != nil {
		a, err := gatherAWS(ctx, o, in)
		if err != nil {
			return nil, err
		}
		in.AWS = a
	}
	return in, nil
}

func gatherAWS(ctx context.Context, o Options, in *Inputs) (*AWSInputs, error) {
	a := &AWSInputs{NodeRoles: map[string]string{}}
	for _, nc := range in.NodeClasses {
		arn, err := awsprovider.NodeRoleARN(ctx, o.AWS.IAM, &nc)
		if err != nil {
			a.Skipped = append(a.Skipped, fmt.Sprintf("node-role of ec2nodeclass %s: %v", nc.Name, err))
			continue
		}
		a.NodeRoles[nc.Name] = arn
	}
	if o.AWS.EKS == nil {
		a.AccessEntriesUnknown = "no EKS client"
	} else if access, err := awsprovider.ReadClusterAccess(ctx, o.AWS.EKS, o.ClusterName); err != nil {
		a.AccessEntriesUnknown = err.Error()
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			a.AccessEntriesUnknown = "EKS answered " + apiErr.ErrorCode() + " for cluster " + o.ClusterName
		}
	} else {
		a.AuthMode, a.AccessEntries = access.Mode, access.Entries
	}
	var ids []string
	for _, nc := range in.NodeClasses {
		for _, s := range nc.Status.Subnets {
			if !slices.Contains(ids, s.ID) {
				ids = append(ids, s.ID)
			}
		}
	}
	if len(ids) > 0 {
		out, err := o.AWS.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
		if err != nil {
			return nil, fmt.Errorf("describing subnets %v: %w", ids, err)
		}
		a.Subnets = out.Subnets
	}
	p := ec2.NewDescribeInstancesPaginator(o.AWS.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{o.ClusterName}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances tagged %s=%s: %w", awsv1.TagEKSClusterName, o.ClusterName, err)
		}
		for _, r := range page.Reservations {
			a.Instances = append(a.Instances, r.Instances...)
		}
	}
	return a, nil
}

// AWSOptions say which cluster's account ForAWS reads.
type AWSOptions struct {
	Config aws.Config
	// Kube reads the EC2NodeClasses for the provider.
	Kube client.Client
	// ClusterName, ClusterID and ClusterEndpoint are as in Options;
	// KubernetesVersion ("1.36") and SSMParameterRoot resolve AMI aliases.
	ClusterName, ClusterID, ClusterEndpoint, KubernetesVersion, SSMParameterRoot string
}

// ForAWS fills o's AWS clients and instance type listing from an AWS
// configuration: the listing is joiner's AWS provider itself, so a
// NodePool is judged against exactly the types joiner would launch.
func ForAWS(o *Options, a AWSOptions) error {
	e := ec2.NewFromConfig(a.Config)
	i := iam.NewFromConfig(a.Config)
	o.AWS = &AWSClients{EC2: e, IAM: i, EKS: eks.NewFromConfig(a.Config)}
	p, err := awsprovider.New(awsprovider.Options{
		EC2: e, IAM: i, SSM: ssm.NewFromConfig(a.Config), Client: a.Kube,
		Region: a.Config.Region, ClusterName: a.ClusterName, ClusterID: a.ClusterID, ClusterEndpoint: a.ClusterEndpoint,
		KubernetesVersion: a.KubernetesVersion, SSMParameterRoot: a.SSMParameterRoot,
		// Doctor lists instance types; it never prices a launch, so the
		// built-in price table will do.
		IsolatedVPC: true, UserData: awsprovider.GenerateUserData,
	})
	if err != nil {
		return fmt.Errorf("setting up the aws cloud provider: %w", err)
	}
	o.InstanceTypes = func(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
		return p.GetInstanceTypes(ctx, np)
	}
	return nil
}
