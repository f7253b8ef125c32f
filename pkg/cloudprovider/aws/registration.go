package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// How long a node role's ARN and aws-auth's content are reused: a waiting
// NodeClaim is reconciled often, and a fix to aws-auth must show within a
// batch window.
const (
	roleARNTTL = 5 * time.Minute
	awsAuthTTL = 2 * time.Second
)

var (
	_ cloudprovider.RegistrationDiagnoser = (*Provider)(nil)
	_ cloudprovider.AccessReader          = (*Provider)(nil)
)

// RoleAPI reads a node role's ARN.
type RoleAPI interface {
	GetRole(context.Context, *iam.GetRoleInput, ...func(*iam.Options)) (*iam.GetRoleOutput, error)
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// NodeRoleARN is the ARN of the role nc's nodes run as: spec.role's, or
// the first role of spec.instanceProfile. The controller and `joiner
// doctor` both read it here.
func NodeRoleARN(ctx context.Context, c RoleAPI, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.Role != "" {
		out, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(nc.Spec.Role)})
		if err != nil {
			return "", fmt.Errorf("reading role %s: %w", nc.Spec.Role, err)
		}
		return aws.ToString(out.Role.Arn), nil
	}
	if nc.Spec.InstanceProfile != nil {
		out, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: nc.Spec.InstanceProfile})
		if err != nil {
			return "", fmt.Errorf("reading instance profile %s: %w", *nc.Spec.InstanceProfile, err)
		}
		if len(out.InstanceProfile.Roles) == 0 {
			return "", fmt.Errorf("instance profile %s has no role", *nc.Spec.InstanceProfile)
		}
		return aws.ToString(out.InstanceProfile.Roles[0].Arn), nil
	}
	return "", errors.New("neither spec.role nor spec.instanceProfile is set")
}

// EKSAccessAPI are the EKS calls that read how a cluster maps IAM roles
// besides kube-system/aws-auth.
type EKSAccessAPI interface {
	DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
	ListAccessEntries(context.Context, *eks.ListAccessEntriesInput, ...func(*eks.Options)) (*eks.ListAccessEntriesOutput, error)
}

// ClusterAccess is how an EKS cluster maps IAM roles besides aws-auth.
type ClusterAccess struct {
	// Mode is the cluster's authenticationMode ("" when EKS names none:
	// aws-auth and access entries both count).
	Mode ekstypes.AuthenticationMode
	// Entries are the principal ARNs of its access entries.
	Entries []string
}

// ReadClusterAccess reads cluster's authenticationMode (DescribeCluster)
// and its access entries (ListAccessEntries). The controller and `joiner
// doctor` both read them here.
func ReadClusterAccess(ctx context.Context, api EKSAccessAPI, cluster string) (ClusterAccess, error) {
	var a ClusterAccess
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return a, fmt.Errorf("describing EKS cluster %s: %w", cluster, err)
	}
	if out.Cluster != nil && out.Cluster.AccessConfig != nil {
		a.Mode = out.Cluster.AccessConfig.AuthenticationMode
	}
	if a.Mode == ekstypes.AuthenticationModeConfigMap {
		return a, nil
	}
	pages := eks.NewListAccessEntriesPaginator(api, &eks.ListAccessEntriesInput{ClusterName: aws.String(cluster)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return ClusterAccess{}, fmt.Errorf("listing access entries of EKS cluster %s: %w", cluster, err)
		}
		a.Entries = append(a.Entries, page.AccessEntries...)
	}
	return a, nil
}

// WhyNotRegistered implements cloudprovider.RegistrationDiagnoser (seed
// 001): a node role that kube-system/aws-auth does not map is refused by
// the API server, so the Node never registers. It judges with
// bootstrap.Authorize, as `joiner doctor` and the emulated machines do.
// It also reads the cluster's EKS authenticationMode and access entries
// (ReadClusterAccess). Without aws-auth and without access entries it
// could read (no EKS client, or EKS refused) it knows no cause.
func (p *Provider) WhyNotRegistered(ctx context.Context, nc *v1.NodeClaim) (string, error) {
	if p.opts.APIReader == nil || nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Kind != "EC2NodeClass" {
		return "", nil
	}
	cm, err := p.awsAuth(ctx)
	if err != nil {
		return "", err
	}
	access, known := p.clusterAccess(ctx)
	if cm == nil && !known {
		return "", nil
	}
	class := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}, class); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	arn, err := p.nodeRoleARN(ctx, class)
	if err != nil {
		return "", err
	}
	why := bootstrap.AuthorizeMode(access.Mode, cm, arn, access.Entries)
	if why == "" {
		return "", nil
	}
	return unmappedRole(p.opts.ClusterName, class.Name, arn, cm, access, known, why), nil
}

// unmappedRole is the cause WhyNotRegistered names: where the role was
// looked for, what is mapped there, why the API server refuses the kubelet
// and the fix for the cluster's authentication mode.
func unmappedRole(cluster, class, arn string, cm *corev1.ConfigMap, access ClusterAccess, known bool, why string) string {
	entries := "none"
	if len(access.Entries) > 0 {
		entries = strings.Join(access.Entries, ", ")
	}
	createEntry := fmt.Sprintf("aws eks create-access-entry --cluster-name %s --principal-arn %s --type EC2_LINUX", cluster, arn)
	mapIt := fmt.Sprintf("Map it in mapRoles with username %s and groups system:bootstrappers, system:nodes", bootstrap.NodeUsername)
	switch {
	case !known:
		return fmt.Sprintf("node role %s of EC2NodeClass %s is not mapped in %s/%s (mapped: %s): %s. %s (or give it an EKS access entry of type EC2_LINUX); joiner launches again as soon as aws-auth changes",
			arn, class, bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, mappedRoles(cm), why, mapIt)
	case access.Mode == ekstypes.AuthenticationModeApi:
		return fmt.Sprintf("node role %s of EC2NodeClass %s has no EKS access entry in cluster %s (authenticationMode API; entries: %s): %s. Create one: %s",
			arn, class, cluster, entries, why, createEntry)
	case access.Mode == ekstypes.AuthenticationModeConfigMap:
		return fmt.Sprintf("node role %s of EC2NodeClass %s is not mapped in %s/%s (mapped: %s; cluster %s's authenticationMode CONFIG_MAP ignores access entries): %s. %s; joiner launches again as soon as aws-auth changes",
			arn, class, bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, mappedRoles(cm), cluster, why, mapIt)
	}
	return fmt.Sprintf("node role %s of EC2NodeClass %s is mapped neither in %s/%s (mapped: %s) nor by an EKS access entry of cluster %s (entries: %s): %s. %s, or create an access entry: %s",
		arn, class, bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, mappedRoles(cm), cluster, entries, why, mapIt, createEntry)
}

// AccessDigest implements cloudprovider.AccessReader: the cluster's
// authenticationMode and its access entries' principals, in order, hashed;
// "" when they cannot be read (no EKS client, or EKS refused). An access
// entry created for an unmapped node role (seed 001 on a cluster in API
// mode) changes it.
func (p *Provider) AccessDigest(ctx context.Context) (string, error) {
	a, known := p.clusterAccess(ctx)
	if !known {
		return "", nil
	}
	entries := slices.Clone(a.Entries)
	slices.Sort(entries)
	sum := sha256.Sum256([]byte(string(a.Mode) + "\n" + strings.Join(entries, "\n")))
	return hex.EncodeToString(sum[:8]), nil
}

// clusterAccess is ReadClusterAccess reused for awsAuthTTL; known is false
// without an EKS client or when EKS refused (then aws-auth judges alone).
func (p *Provider) clusterAccess(ctx context.Context) (ClusterAccess, bool) {
	const key = "cluster-access"
	if p.eks == nil {
		return ClusterAccess{}, false
	}
	if v, ok := p.cache.Get(key); ok {
		a, known := v.(ClusterAccess)
		return a, known
	}
	a, err := ReadClusterAccess(ctx, p.eks, p.opts.ClusterName)
	if err != nil {
		log.FromContext(ctx).V(1).Info("reading the cluster's EKS access entries", logging.Error, err.Error())
		p.cache.Set(key, false, awsAuthTTL)
		return ClusterAccess{}, false
	}
	p.cache.Set(key, a, awsAuthTTL)
	return a, true
}

// awsAuth reads kube-system/aws-auth (nil when absent), reused for
// awsAuthTTL.
func (p *Provider) awsAuth(ctx context.Context) (*corev1.ConfigMap, error) {
	const key = "aws-auth"
	if v, ok := p.cache.Get(key); ok {
		cm, _ := v.(*corev1.ConfigMap)
		return cm, nil
	}
	cm := &corev1.ConfigMap{}
	err := p.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: bootstrap.AWSAuthNamespace, Name: bootstrap.AWSAuthName}, cm)
	if apierrors.IsNotFound(err) {
		cm = nil
	} else if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, err)
	}
	p.cache.Set(key, cm, awsAuthTTL)
	return cm, nil
}

func (p *Provider) nodeRoleARN(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	key := "role-arn/" + nc.Spec.Role
	if nc.Spec.InstanceProfile != nil {
		key = "profile-role-arn/" + *nc.Spec.InstanceProfile
	}
	if v, ok := p.cache.Get(key); ok {
		return v.(string), nil
	}
	arn, err := NodeRoleARN(ctx, p.iam, nc)
	if err != nil {
		return "", err
	}
	p.cache.Set(key, arn, roleARNTTL)
	return arn, nil
}

// mappedRoles lists the role ARNs aws-auth maps, "none" when it maps none.
func mappedRoles(cm *corev1.ConfigMap) string {
	if cm == nil {
		return "none: the ConfigMap does not exist"
	}
	var roles []bootstrap.RoleMapping
	if err := yaml.Unmarshal([]byte(cm.Data["mapRoles"]), &roles); err != nil || len(roles) == 0 {
		return "none"
	}
	arns := make([]string, 0, len(roles))
	for _, r := range roles {
		arns = append(arns, r.RoleARN)
	}
	return strings.Join(arns, ", ")
}
