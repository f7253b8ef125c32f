package aws

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// instanceProfilePath is where the profiles of this cluster's node classes
// live, so they can be found and collected without touching anyone else's.
func (p *Provider) instanceProfilePath(nc *awsv1.EC2NodeClass) string {
	return fmt.Sprintf("/karpenter/%s/%s/%s/", p.opts.Region, p.opts.ClusterName, nc.UID)
}

// instanceProfileName is the managed profile of a node class and role: a
// role change yields a new profile, as Karpenter's does.
func (p *Provider) instanceProfileName(nc *awsv1.EC2NodeClass) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.opts.Region + "/" + nc.Name + "/" + string(nc.UID) + "/" + roleName(nc.Spec.Role)))
	name := fmt.Sprintf("%s_%d", p.opts.ClusterName, h.Sum64())
	if len(name) > 128 {
		name = name[len(name)-128:]
	}
	return name
}

// roleName strips an ARN or path from spec.role: IAM wants the bare name.
func roleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 {
		return role[i+1:]
	}
	return role
}

// instanceProfile returns the node class's instance profile: spec.instanceProfile
// when it exists, or the managed profile for spec.role, created (tagged,
// under this cluster's path) and given the role when needed.
func (p *Provider) instanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil && *nc.Spec.InstanceProfile != "" {
		name := *nc.Spec.InstanceProfile
		key := cacheKey("profile", name)
		if _, ok := p.cache.Get(key); ok {
			return name, nil
		}
		if _, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
			if isIAMNotFound(err) {
				return "", badInput("spec.instanceProfile: instance profile %q does not exist in IAM; create it or set spec.role instead and let joiner manage one", name)
			}
			return "", fmt.Errorf("getting instance profile %s: %w", name, err)
		}
		p.cache.Set(key, true, instanceProfileCacheTTL)
		return name, nil
	}
	if nc.Spec.Role == "" {
		return "", badInput("spec.role or spec.instanceProfile must be set")
	}
	role := roleName(nc.Spec.Role)
	name := p.instanceProfileName(nc)
	key := cacheKey("profile", name, role)
	if _, ok := p.cache.Get(key); ok {
		return name, nil
	}
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	switch {
	case isIAMNotFound(err):
		if _, err := p.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
			if isIAMNotFound(err) {
				return "", badInput("spec.role: role %q does not exist in IAM; create the node role (and map it in kube-system/aws-auth or an EKS access entry) or fix the name", role)
			}
			return "", fmt.Errorf("getting role %s: %w", role, err)
		}
		if _, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Path:                aws.String(p.instanceProfilePath(nc)),
			Tags:                p.iamTags(nc),
		}); err != nil {
			var exists *iamtypes.EntityAlreadyExistsException
			if !errors.As(err, &exists) {
				return "", fmt.Errorf("creating instance profile %s: %w", name, err)
			}
		}
		if _, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
			return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
		}
	case err != nil:
		return "", fmt.Errorf("getting instance profile %s: %w", name, err)
	default:
		has := false
		for _, r := range out.InstanceProfile.Roles {
			has = has || aws.ToString(r.RoleName) == role
		}
		if !has {
			if _, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
				if isIAMNotFound(err) {
					return "", badInput("spec.role: role %q does not exist in IAM; create the node role or fix the name", role)
				}
				return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
			}
		}
	}
	p.cache.Set(key, true, instanceProfileCacheTTL)
	return name, nil
}

// deleteInstanceProfile removes the managed profile of a deleted node
// class. Profiles joiner did not create (spec.instanceProfile) are left.
func (p *Provider) deleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if nc.Spec.Role == "" {
		return nil
	}
	name := p.instanceProfileName(nc)
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isIAMNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	if aws.ToString(out.InstanceProfile.Path) != p.instanceProfilePath(nc) {
		return nil // not ours to delete
	}
	for _, r := range out.InstanceProfile.Roles {
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !isIAMNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isIAMNotFound(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}

func (p *Provider) iamTags(nc *awsv1.EC2NodeClass) []iamtypes.Tag {
	var out []iamtypes.Tag
	for k, v := range p.resourceTags(nc, nil) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out = append(out, iamtypes.Tag{Key: aws.String(v1.LabelTopologyRegion), Value: aws.String(p.opts.Region)})
	return out
}

func isIAMNotFound(err error) bool {
	var nf *iamtypes.NoSuchEntityException
	return errors.As(err, &nf)
}
