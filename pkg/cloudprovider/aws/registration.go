package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/bootstrap"
)

// How long a node role's ARN and aws-auth's content are reused: a waiting
// NodeClaim is reconciled often, and a fix to aws-auth must show within a
// batch window.
const (
	roleARNTTL = 5 * time.Minute
	awsAuthTTL = 2 * time.Second
)

var _ cloudprovider.RegistrationDiagnoser = (*Provider)(nil)

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

// WhyNotRegistered implements cloudprovider.RegistrationDiagnoser (seed
// 001): a node role that kube-system/aws-auth does not map is refused by
// the API server, so the Node never registers. It judges with
// bootstrap.Authorize, as `joiner doctor` and the emulated machines do.
// Without aws-auth (a cluster that maps nodes with EKS access entries
// only) or without an API reader it knows no cause.
func (p *Provider) WhyNotRegistered(ctx context.Context, nc *v1.NodeClaim) (string, error) {
	if p.opts.APIReader == nil || nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Kind != "EC2NodeClass" {
		return "", nil
	}
	cm, err := p.awsAuth(ctx)
	if err != nil || cm == nil {
		return "", err
	}
	class := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}, class); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	arn, err := p.nodeRoleARN(ctx, class)
	if err != nil {
		return "", err
	}
	why := bootstrap.Authorize(cm, arn, nil)
	if why == "" {
		return "", nil
	}
	return fmt.Sprintf("node role %s of EC2NodeClass %s is not mapped in %s/%s (mapped: %s): %s. Map it in mapRoles with username %s and groups system:bootstrappers, system:nodes (or give it an EKS access entry of type EC2_LINUX); joiner launches again as soon as aws-auth changes",
		arn, class.Name, bootstrap.AWSAuthNamespace, bootstrap.AWSAuthName, mappedRoles(cm), why, bootstrap.NodeUsername), nil
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
