package aws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Cache lifetimes, as Karpenter's (reference §3.5).
const (
	defaultCacheTTL         = time.Minute
	ssmCacheTTL             = 24 * time.Hour
	instanceProfileCacheTTL = 15 * time.Minute
)

// subnetInfo is a resolved subnet with its free addresses.
type subnetInfo struct {
	ID, Zone, ZoneID string
	AvailableIPs     int32
}

// selectorError is bad input: a selector term, role or alias that cannot
// resolve. Its message names the field and the fix; it becomes a condition,
// not a retry loop.
type selectorError struct{ msg string }

func (e *selectorError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &selectorError{msg: fmt.Sprintf(format, args...)}
}

func isBadInput(err error) bool {
	var e *selectorError
	return errors.As(err, &e)
}

func cacheKey(parts ...any) string {
	b, _ := json.Marshal(parts)
	return string(b)
}

// tagFilters turns selector tags into EC2 filters; "*" matches any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ec2types.Filter
	for _, k := range keys {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// subnets resolves the subnet selector terms (ORed), most free addresses
// first. Results are cached for a minute; fresh forces a call, which is how
// exhausted subnets are re-checked.
func (p *Provider) subnets(ctx context.Context, nc *awsv1.EC2NodeClass, fresh bool) ([]subnetInfo, error) {
	key := cacheKey("subnets", nc.Spec.SubnetSelectorTerms)
	if !fresh {
		if v, ok := p.cache.Get(key); ok {
			return v.([]subnetInfo), nil
		}
	}
	seen := map[string]bool{}
	var out []subnetInfo
	for i, term := range nc.Spec.SubnetSelectorTerms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		if term.CIDR != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("cidr-block"), Values: []string{term.CIDR}})
		}
		if len(in.Filters) == 0 {
			return nil, badInput("spec.subnetSelectorTerms[%d] is empty; give tags or an id", i)
		}
		pages := ec2.NewDescribeSubnetsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing subnets of spec.subnetSelectorTerms[%d]: %w", i, err)
			}
			for _, s := range page.Subnets {
				id := aws.ToString(s.SubnetId)
				if seen[id] || s.State == ec2types.SubnetStateFailed {
					continue
				}
				seen[id] = true
				out = append(out, subnetInfo{ID: id, Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId), AvailableIPs: aws.ToInt32(s.AvailableIpAddressCount)})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b subnetInfo) int {
		return cmp.Or(cmp.Compare(b.AvailableIPs, a.AvailableIPs), cmp.Compare(a.ID, b.ID))
	})
	p.cache.Set(key, out, defaultCacheTTL)
	p.exhausted.observe(out)
	return out, nil
}

// securityGroups resolves the security group selector terms (ORed).
func (p *Provider) securityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	key := cacheKey("securitygroups", nc.Spec.SecurityGroupSelectorTerms)
	if v, ok := p.cache.Get(key); ok {
		return v.([]awsv1.SecurityGroup), nil
	}
	seen := map[string]bool{}
	var out []awsv1.SecurityGroup
	for i, term := range nc.Spec.SecurityGroupSelectorTerms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		if len(in.Filters) == 0 {
			return nil, badInput("spec.securityGroupSelectorTerms[%d] is empty; give tags, an id or a name", i)
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups of spec.securityGroupSelectorTerms[%d]: %w", i, err)
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				if !seen[id] {
					seen[id] = true
					out = append(out, awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b awsv1.SecurityGroup) int { return cmp.Compare(a.ID, b.ID) })
	p.cache.Set(key, out, defaultCacheTTL)
	return out, nil
}

// ssmParameter reads a parameter, cached for a day; a missing parameter is
// ("", nil).
func (p *Provider) ssmParameter(ctx context.Context, name string) (string, error) {
	key := cacheKey("ssm", name)
	if v, ok := p.cache.Get(key); ok {
		return v.(string), nil
	}
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	var nf *ssmtypes.ParameterNotFound
	if errors.As(err, &nf) {
		p.cache.Set(key, "", defaultCacheTTL)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading SSM parameter %s: %w", name, err)
	}
	v := aws.ToString(out.Parameter.Value)
	p.cache.Set(key, v, ssmCacheTTL)
	return v, nil
}

// AMI variants of the EKS-optimised images, and the instance types each
// serves (Karpenter's): standard for types without GPU or accelerator,
// nvidia for GPU types, neuron for AWS accelerator types.
const (
	variantStandard = "standard"
	variantNvidia   = "nvidia"
	variantNeuron   = "neuron"
)

// variantRequirements are the instance type requirements of a variant,
// beside the architecture.
func variantRequirements(variant string) []corev1.NodeSelectorRequirement {
	switch variant {
	case variantNvidia:
		return []corev1.NodeSelectorRequirement{{Key: v1.LabelAWSInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case variantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: v1.LabelAWSInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	}
	return []corev1.NodeSelectorRequirement{
		{Key: v1.LabelAWSInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: v1.LabelAWSInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
}

// aliasParameter is one SSM parameter of an alias: the image it names
// serves instance types of arch with the variant's requirements.
type aliasParameter struct {
	name, arch string
	// variants the image serves: AL2's GPU image serves both NVIDIA and
	// Neuron types.
	variants []string
}

// aliasParameters are the SSM parameters (under the configured root) that
// name the images of an alias, per architecture and variant, as Karpenter
// resolves them: AL2023 standard/nvidia/neuron (neuron on x86_64 only),
// AL2 standard and -gpu (x86_64), Bottlerocket standard and -nvidia,
// Windows standard on x86_64.
func aliasParameters(root, k8s string, a awsv1.Alias) []aliasParameter {
	root = strings.TrimSuffix(root, "/")
	latest := a.Version == awsv1.AliasVersionLatest
	var out []aliasParameter
	for _, arch := range []string{"x86_64", "arm64"} {
		switch a.Family {
		case awsv1.AMIFamilyAL2023:
			variants := []string{variantStandard, variantNvidia}
			if arch == "x86_64" {
				variants = append(variants, variantNeuron)
			}
			for _, variant := range variants {
				release := "recommended"
				if !latest {
					release = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, variant, k8s, a.Version)
				}
				out = append(out, aliasParameter{name: fmt.Sprintf("%s/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", root, k8s, arch, variant, release),
					arch: arch, variants: []string{variant}})
			}
		case awsv1.AMIFamilyAL2:
			type image struct{ path, node string }
			images := map[string]image{variantStandard: {"amazon-linux-2", "amazon-eks-node"}, variantNvidia: {"amazon-linux-2-gpu", "amazon-eks-gpu-node"}}
			if arch == "arm64" {
				images = map[string]image{variantStandard: {"amazon-linux-2-arm64", "amazon-eks-arm64-node"}}
			}
			for _, variant := range []string{variantStandard, variantNvidia} {
				img, ok := images[variant]
				if !ok {
					continue
				}
				release := "recommended"
				if !latest {
					release = fmt.Sprintf("%s-%s-%s", img.node, k8s, a.Version)
				}
				serves := []string{variant}
				if variant == variantNvidia {
					serves = []string{variantNvidia, variantNeuron}
				}
				out = append(out, aliasParameter{name: fmt.Sprintf("%s/eks/optimized-ami/%s/%s/%s/image_id", root, k8s, img.path, release), arch: arch, variants: serves})
			}
		case awsv1.AMIFamilyBottlerocket:
			version := a.Version
			if !latest && !strings.HasPrefix(version, "v") {
				version = "v" + version
			}
			out = append(out,
				aliasParameter{name: fmt.Sprintf("%s/bottlerocket/aws-k8s-%s/%s/%s/image_id", root, k8s, arch, version), arch: arch, variants: []string{variantStandard}},
				aliasParameter{name: fmt.Sprintf("%s/bottlerocket/aws-k8s-%s-nvidia/%s/%s/image_id", root, k8s, arch, version), arch: arch, variants: []string{variantNvidia}})
		default: // Windows: amd64 only, latest only
			if arch != "x86_64" {
				continue
			}
			out = append(out, aliasParameter{name: fmt.Sprintf("%s/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", root, strings.TrimPrefix(a.Family, "Windows"), k8s),
				arch: arch, variants: []string{variantStandard}})
		}
	}
	return out
}

// amiCandidate is an image found by a selector term.
type amiCandidate struct {
	awsv1.AMI
	created string
}

// amis resolves the AMI selector terms: per requirement set (architecture)
// the newest non-deprecated image wins, deprecated ones only when nothing
// else matches.
func (p *Provider) amis(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	key := cacheKey("amis", nc.Spec.AMISelectorTerms, p.opts.KubernetesVersion)
	if v, ok := p.cache.Get(key); ok {
		return v.([]awsv1.AMI), nil
	}
	var queries []*ec2.DescribeImagesInput
	var ids []string
	// known holds, for images an alias names, the variants each serves:
	// what DescribeImages cannot say (GPU and accelerator support).
	known := map[string][]string{}
	for i, term := range nc.Spec.AMISelectorTerms {
		switch {
		case term.Alias != "":
			alias, err := awsv1.ParseAlias(term.Alias)
			if err != nil {
				return nil, badInput("spec.amiSelectorTerms[%d].alias: %v; use one of al2023, al2, bottlerocket, windows2019, windows2022, windows2025 followed by @latest or @<version>", i, err)
			}
			for _, param := range aliasParameters(p.opts.SSMParameterRoot, p.opts.KubernetesVersion, alias) {
				id, err := p.ssmParameter(ctx, param.name)
				if err != nil {
					return nil, err
				}
				if id != "" {
					ids = append(ids, id)
					known[id] = append(known[id], param.variants...)
				}
			}
		case term.SSMParameter != "":
			id, err := p.ssmParameter(ctx, term.SSMParameter)
			if err != nil {
				return nil, err
			}
			if id == "" {
				return nil, badInput("spec.amiSelectorTerms[%d].ssmParameter: parameter %s does not exist", i, term.SSMParameter)
			}
			ids = append(ids, id)
		case term.ID != "":
			ids = append(ids, term.ID)
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags), Owners: []string{"self", "amazon"}}
			if term.Owner != "" {
				in.Owners = []string{term.Owner}
			}
			if term.Name != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
			}
			if len(in.Filters) == 0 {
				return nil, badInput("spec.amiSelectorTerms[%d] is empty; give an alias, id, name, tags or ssmParameter", i)
			}
			queries = append(queries, in)
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		queries = append(queries, &ec2.DescribeImagesInput{ImageIds: slices.Compact(ids)})
	}
	best := map[string]amiCandidate{} // requirement key -> image
	for _, in := range queries {
		out, err := p.ec2.DescribeImages(ctx, in)
		if err != nil {
			var apiErr interface{ ErrorCode() string }
			if errors.As(err, &apiErr) && strings.HasPrefix(apiErr.ErrorCode(), "InvalidAMIID") {
				return nil, badInput("spec.amiSelectorTerms: %v", err)
			}
			return nil, fmt.Errorf("describing images: %w", err)
		}
		for _, img := range out.Images {
			if img.State != ec2types.ImageStateAvailable && img.State != "" {
				continue
			}
			arch := kubeArch(string(img.Architecture))
			if arch == "" {
				continue
			}
			variants := known[aws.ToString(img.ImageId)]
			if len(variants) == 0 {
				variants = []string{""} // a selected image: arch only
			}
			for _, variant := range variants {
				reqs := []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
				if variant != "" {
					reqs = append(reqs, variantRequirements(variant)...)
				}
				c := amiCandidate{
					AMI:     awsv1.AMI{ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Requirements: reqs},
					created: aws.ToString(img.CreationDate),
				}
				if dep := aws.ToString(img.DeprecationTime); dep != "" {
					if t, err := time.Parse(time.RFC3339, dep); err == nil && !t.After(p.clock.Now()) {
						c.Deprecated = true
					}
				}
				k := arch + "/" + variant
				if prev, ok := best[k]; !ok || better(c, prev) {
					best[k] = c
				}
			}
		}
	}
	var out []awsv1.AMI
	for _, c := range best {
		out = append(out, c.AMI)
	}
	slices.SortFunc(out, func(a, b awsv1.AMI) int {
		return cmp.Or(cmp.Compare(a.Requirements[0].Values[0], b.Requirements[0].Values[0]), cmp.Compare(requirementsKey(a), requirementsKey(b)), cmp.Compare(a.ID, b.ID))
	})
	p.cache.Set(key, out, defaultCacheTTL)
	return out, nil
}

func better(a, b amiCandidate) bool {
	if a.Deprecated != b.Deprecated {
		return !a.Deprecated
	}
	if a.created != b.created {
		return a.created > b.created
	}
	return a.ID < b.ID
}

// kubeArch maps EC2 architectures to kubernetes.io/arch values.
func kubeArch(ec2Arch string) string {
	switch ec2Arch {
	case "x86_64":
		return "amd64"
	case "arm64":
		return "arm64"
	}
	return ""
}

func requirementsKey(a awsv1.AMI) string {
	b, _ := json.Marshal(a.Requirements)
	return string(b)
}

// amiAdmits reports whether an instance type with the given requirements
// (its labels) may boot image a: every one of a's requirements admits it.
func amiAdmits(a awsv1.AMI, reqs map[string][]string) bool {
	for _, r := range a.Requirements {
		if !v1.RequirementAdmitsAny(r.Operator, r.Values, reqs[r.Key]) {
			return false
		}
	}
	return true
}
