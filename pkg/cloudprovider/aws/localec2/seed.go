package localec2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// DefaultParameterRoot is where Seed publishes the image parameters. The
// provider's SSM parameter root setting replaces the public "/aws/service"
// with it; moto refuses writes under /aws/.
const DefaultParameterRoot = "/joiner-local/service"

// TagDiscovery is the tag Karpenter's getting-started guide puts on a
// cluster's subnets and security groups, and Seed does too.
const TagDiscovery = "karpenter.sh/discovery"

// TagAMIVariant tags each seeded image with its variant (standard,
// nvidia, neuron, gpu), which the emulated bootstrap reads to decide
// whether accelerators become node resources.
const TagAMIVariant = "joiner.dev/ami-variant"

// DefaultKubernetesVersions are the versions whose alias parameters Seed
// publishes when SeedOptions names none.
var DefaultKubernetesVersions = []string{"1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36"}

// Image families and architectures Seed registers.
var (
	Families      = []string{"AL2023", "AL2", "Bottlerocket"}
	Architectures = []string{"x86_64", "arm64"}
)

// ImageVersion is the release every seeded image claims to be.
const ImageVersion = "v20260101"

// SeedOptions describe the cluster to seed.
type SeedOptions struct {
	// ClusterName is the value of the karpenter.sh/discovery tags.
	ClusterName string
	// ParameterRoot defaults to DefaultParameterRoot.
	ParameterRoot string
	// KubernetesVersions default to DefaultKubernetesVersions.
	KubernetesVersions []string
	// Zones default to the first three zones of the region.
	Zones []string
	// VPCCIDR defaults to 10.0.0.0/16; subnets are consecutive /20s in it.
	VPCCIDR string
	// SubnetPrefixLength defaults to 20 (4091 free addresses per subnet);
	// a long prefix (say 28, 11 addresses) makes subnets easy to exhaust.
	SubnetPrefixLength int
	// RoleName defaults to KarpenterNodeRole-<cluster>.
	RoleName string
	// Network is the EKS cluster's network configuration (default: IPv4,
	// DefaultServiceCIDR).
	Network EKSNetwork
}

// Cluster is what Seed created.
type Cluster struct {
	Name            string
	VPCID           string
	Subnets         []Subnet
	SecurityGroupID string
	RoleName        string
	ParameterRoot   string
	AMIs            []AMI
}

// Subnet is a seeded subnet.
type Subnet struct {
	ID, Zone, CIDR string
}

// AMI is a seeded image.
type AMI struct {
	ID, Name, Family, Architecture string
	// Variant is standard, nvidia, neuron (AL2023), gpu (AL2) or nvidia
	// (Bottlerocket), as the public EKS images.
	Variant string
}

// Variants are the accelerated images seeded beside the standard ones, per
// family and architecture, as EKS publishes them.
var Variants = map[string]map[string][]string{
	"AL2023":       {"x86_64": {"nvidia", "neuron"}, "arm64": {"nvidia"}},
	"AL2":          {"x86_64": {"gpu"}},
	"Bottlerocket": {"x86_64": {"nvidia"}, "arm64": {"nvidia"}},
}

// AMI returns the seeded standard image of family and architecture, or
// nil.
func (c *Cluster) AMI(family, arch string) *AMI {
	return c.AMIVariant(family, arch, "standard")
}

// AMIVariant returns the seeded image of family, architecture and variant,
// or nil.
func (c *Cluster) AMIVariant(family, arch, variant string) *AMI {
	for i := range c.AMIs {
		if c.AMIs[i].Family == family && c.AMIs[i].Architecture == arch && c.AMIs[i].Variant == variant {
			return &c.AMIs[i]
		}
	}
	return nil
}

// Seed creates a cluster's AWS side in the account cfg reaches. It is
// meant for a local EC2: against a real account it would create real
// resources.
func Seed(ctx context.Context, cfg aws.Config, opts SeedOptions) (*Cluster, error) {
	if opts.ClusterName == "" {
		return nil, errors.New("seeding the local EC2: ClusterName is required")
	}
	if opts.ParameterRoot == "" {
		opts.ParameterRoot = DefaultParameterRoot
	}
	if len(opts.KubernetesVersions) == 0 {
		opts.KubernetesVersions = DefaultKubernetesVersions
	}
	if opts.VPCCIDR == "" {
		opts.VPCCIDR = "10.0.0.0/16"
	}
	if opts.SubnetPrefixLength == 0 {
		opts.SubnetPrefixLength = 20
	}
	if opts.RoleName == "" {
		opts.RoleName = "KarpenterNodeRole-" + opts.ClusterName
	}
	e := ec2.NewFromConfig(cfg)
	c := &Cluster{Name: opts.ClusterName, RoleName: opts.RoleName, ParameterRoot: strings.TrimSuffix(opts.ParameterRoot, "/")}
	if err := seedNetwork(ctx, e, c, opts); err != nil {
		return nil, fmt.Errorf("seeding the local EC2 for cluster %s: %w", opts.ClusterName, err)
	}
	if err := seedRole(ctx, iam.NewFromConfig(cfg), c); err != nil {
		return nil, fmt.Errorf("seeding the local EC2 for cluster %s: %w", opts.ClusterName, err)
	}
	if err := seedImages(ctx, e, ssm.NewFromConfig(cfg), c, cfg.Region, opts.KubernetesVersions); err != nil {
		return nil, fmt.Errorf("seeding the local EC2 for cluster %s: %w", opts.ClusterName, err)
	}
	if opts.Network == (EKSNetwork{}) {
		opts.Network = EKSNetwork{IPFamily: "ipv4", ServiceIPv4CIDR: DefaultServiceCIDR}
	}
	subnets := make([]string, len(c.Subnets))
	for i, s := range c.Subnets {
		subnets[i] = s.ID
	}
	// The EKS cluster itself, so DescribeCluster answers as for an EKS
	// user (the service CIDR nodeadm needs).
	if err := CreateEKSCluster(ctx, cfg, opts.ClusterName, "arn:aws:iam::"+motoAccountID+":role/eks-cluster-"+opts.ClusterName, subnets, opts.Network); err != nil {
		return nil, fmt.Errorf("seeding the local EC2 for cluster %s: %w", opts.ClusterName, err)
	}
	return c, nil
}

func discoveryTags(resource ec2types.ResourceType, cluster, name string) []ec2types.TagSpecification {
	return []ec2types.TagSpecification{{
		ResourceType: resource,
		Tags: []ec2types.Tag{
			{Key: aws.String(TagDiscovery), Value: aws.String(cluster)},
			{Key: aws.String("Name"), Value: aws.String(name)},
		},
	}}
}

func seedNetwork(ctx context.Context, e *ec2.Client, c *Cluster, opts SeedOptions) error {
	zones := opts.Zones
	if len(zones) == 0 {
		out, err := e.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
		if err != nil {
			return fmt.Errorf("listing zones: %w", err)
		}
		for _, z := range out.AvailabilityZones {
			zones = append(zones, aws.ToString(z.ZoneName))
		}
		if len(zones) < 3 {
			return fmt.Errorf("region has %d zones, want at least 3", len(zones))
		}
		zones = zones[:3]
	}
	vpc, err := e.CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock:         aws.String(opts.VPCCIDR),
		TagSpecifications: discoveryTags(ec2types.ResourceTypeVpc, c.Name, c.Name),
	})
	if err != nil {
		return fmt.Errorf("creating the VPC: %w", err)
	}
	c.VPCID = aws.ToString(vpc.Vpc.VpcId)
	cidrs, err := subnetCIDRs(opts.VPCCIDR, opts.SubnetPrefixLength, len(zones))
	if err != nil {
		return err
	}
	for i, zone := range zones {
		out, err := e.CreateSubnet(ctx, &ec2.CreateSubnetInput{
			VpcId:             vpc.Vpc.VpcId,
			CidrBlock:         aws.String(cidrs[i]),
			AvailabilityZone:  aws.String(zone),
			TagSpecifications: discoveryTags(ec2types.ResourceTypeSubnet, c.Name, fmt.Sprintf("%s-private-%s", c.Name, zone)),
		})
		if err != nil {
			return fmt.Errorf("creating the subnet in %s: %w", zone, err)
		}
		c.Subnets = append(c.Subnets, Subnet{ID: aws.ToString(out.Subnet.SubnetId), Zone: zone, CIDR: cidrs[i]})
	}
	sg, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         aws.String(c.Name + "-node"),
		Description:       aws.String("nodes of cluster " + c.Name),
		VpcId:             vpc.Vpc.VpcId,
		TagSpecifications: discoveryTags(ec2types.ResourceTypeSecurityGroup, c.Name, c.Name+"-node"),
	})
	if err != nil {
		return fmt.Errorf("creating the security group: %w", err)
	}
	c.SecurityGroupID = aws.ToString(sg.GroupId)
	return nil
}

// subnetCIDRs carves n consecutive subnets of the prefix length out of an
// IPv4 VPC CIDR.
func subnetCIDRs(vpcCIDR string, prefix, n int) ([]string, error) {
	var a, b, cc, d, vpcPrefix int
	if _, err := fmt.Sscanf(vpcCIDR, "%d.%d.%d.%d/%d", &a, &b, &cc, &d, &vpcPrefix); err != nil {
		return nil, fmt.Errorf("parsing VPC CIDR %q: %w", vpcCIDR, err)
	}
	if prefix < vpcPrefix || prefix > 28 {
		return nil, fmt.Errorf("subnet prefix /%d does not fit VPC %s (want /%d to /28)", prefix, vpcCIDR, vpcPrefix)
	}
	base := uint32(a)<<24 | uint32(b)<<16 | uint32(cc)<<8 | uint32(d)
	size := uint32(1) << (32 - prefix)
	if uint64(n)*uint64(size) > uint64(1)<<(32-vpcPrefix) {
		return nil, fmt.Errorf("%d subnets of /%d do not fit VPC %s", n, prefix, vpcCIDR)
	}
	out := make([]string, n)
	for i := range n {
		ip := base + uint32(i)*size
		out[i] = fmt.Sprintf("%d.%d.%d.%d/%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff, prefix)
	}
	return out, nil
}

const ec2AssumeRolePolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

func seedRole(ctx context.Context, c *iam.Client, cl *Cluster) error {
	_, err := c.CreateRole(ctx, &iam.CreateRoleInput{
		RoleName:                 aws.String(cl.RoleName),
		AssumeRolePolicyDocument: aws.String(ec2AssumeRolePolicy),
		Tags:                     []iamtypes.Tag{{Key: aws.String(TagDiscovery), Value: aws.String(cl.Name)}},
	})
	var exists *iamtypes.EntityAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("creating node role %s: %w", cl.RoleName, err)
	}
	return nil
}

// imageName is the name of the public image of family, arch and variant.
func imageName(family, arch, variant string) string {
	switch family {
	case "AL2023":
		return fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s", arch, variant, ImageVersion)
	case "AL2":
		switch {
		case variant == "gpu":
			return "amazon-eks-gpu-node-" + ImageVersion
		case arch == "arm64":
			return "amazon-eks-arm64-node-" + ImageVersion
		}
		return "amazon-eks-node-" + ImageVersion
	default:
		if variant == "nvidia" {
			return fmt.Sprintf("bottlerocket-aws-k8s-nvidia-%s-%s", arch, ImageVersion)
		}
		return fmt.Sprintf("bottlerocket-aws-k8s-%s-%s", arch, ImageVersion)
	}
}

// AliasParameters returns the SSM parameter names (under root) of the
// "latest" standard image of family and arch for a Kubernetes version, as
// the public EKS parameters are laid out.
func AliasParameters(root, family, arch, version string) []string {
	return VariantParameters(root, family, arch, "standard", version)
}

// VariantParameters returns the SSM parameter names (under root) of the
// "latest" image of family, arch and variant for a Kubernetes version.
func VariantParameters(root, family, arch, variant, version string) []string {
	root = strings.TrimSuffix(root, "/")
	switch family {
	case "AL2023":
		return []string{fmt.Sprintf("%s/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", root, version, arch, variant)}
	case "AL2":
		suffix := ""
		switch {
		case variant == "gpu":
			suffix = "-gpu"
		case arch == "arm64":
			suffix = "-arm64"
		}
		return []string{fmt.Sprintf("%s/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", root, version, suffix)}
	case "Bottlerocket":
		name := "aws-k8s-" + version
		if variant == "nvidia" {
			name += "-nvidia"
		}
		return []string{
			fmt.Sprintf("%s/bottlerocket/%s/%s/latest/image_id", root, name, arch),
			fmt.Sprintf("%s/bottlerocket/%s/%s/%s/image_id", root, name, arch, ImageVersion),
		}
	}
	return nil
}

func seedImages(ctx context.Context, e *ec2.Client, s *ssm.Client, c *Cluster, region string, versions []string) error {
	// moto's RegisterImage drops the architecture, CopyImage keeps the
	// source's: copy one of moto's built-in images per architecture.
	sources := map[string]string{}
	for _, arch := range Architectures {
		out, err := e.DescribeImages(ctx, &ec2.DescribeImagesInput{
			Owners:  []string{"amazon"},
			Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{arch}}},
		})
		if err != nil {
			return fmt.Errorf("finding a %s source image: %w", arch, err)
		}
		if len(out.Images) == 0 {
			return fmt.Errorf("the local EC2 has no %s image to copy", arch)
		}
		sources[arch] = aws.ToString(out.Images[0].ImageId)
	}
	for _, family := range Families {
		for _, arch := range Architectures {
			for _, variant := range append([]string{"standard"}, Variants[family][arch]...) {
				if err := seedImage(ctx, e, s, c, region, versions, sources[arch], family, arch, variant); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// seedImage registers one image and publishes its alias parameters.
func seedImage(ctx context.Context, e *ec2.Client, s *ssm.Client, c *Cluster, region string, versions []string, source, family, arch, variant string) error {
	name := imageName(family, arch, variant)
	out, err := e.CopyImage(ctx, &ec2.CopyImageInput{
		SourceImageId: aws.String(source),
		SourceRegion:  aws.String(region),
		Name:          aws.String(name),
		Description:   aws.String(fmt.Sprintf("EKS %s node image (%s), local copy", family, arch)),
	})
	if err != nil {
		return fmt.Errorf("registering image %s: %w", name, err)
	}
	id := aws.ToString(out.ImageId)
	if _, err := e.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{id},
		Tags: []ec2types.Tag{
			{Key: aws.String(TagDiscovery), Value: aws.String(c.Name)},
			{Key: aws.String("joiner.dev/ami-family"), Value: aws.String(family)},
			{Key: aws.String(TagAMIVariant), Value: aws.String(variant)},
		},
	}); err != nil {
		return fmt.Errorf("tagging image %s: %w", name, err)
	}
	c.AMIs = append(c.AMIs, AMI{ID: id, Name: name, Family: family, Architecture: arch, Variant: variant})
	for _, v := range versions {
		for _, p := range VariantParameters(c.ParameterRoot, family, arch, variant, v) {
			if _, err := s.PutParameter(ctx, &ssm.PutParameterInput{
				Name:      aws.String(p),
				Value:     aws.String(id),
				Type:      ssmtypes.ParameterTypeString,
				DataType:  aws.String("aws:ec2:image"),
				Overwrite: aws.Bool(true),
			}); err != nil {
				return fmt.Errorf("publishing parameter %s: %w", p, err)
			}
		}
	}
	return nil
}

// Reset drops every resource the server holds, as a fresh start would.
func (s *Server) Reset(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+"/moto-api/reset", nil)
	if err != nil {
		return fmt.Errorf("resetting the local EC2: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("resetting the local EC2: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting the local EC2: status %s", resp.Status)
	}
	return nil
}

// StartSeeded starts a local EC2 and seeds one cluster in it: the setup
// every AWS test suite and `joiner run --local-ec2` share. On an error
// nothing is left running.
func StartSeeded(ctx context.Context, start StartOptions, seed SeedOptions) (*Server, *Cluster, error) {
	srv, err := Start(ctx, start)
	if err != nil {
		return nil, nil, err
	}
	cl, err := Seed(ctx, srv.Config(), seed)
	if err != nil {
		_ = srv.Stop()
		return nil, nil, err
	}
	return srv, cl, nil
}
