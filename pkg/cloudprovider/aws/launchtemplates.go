package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// launchTemplatePrefix starts the name of every launch template the
// provider creates; the rest is a hash of its contents.
const launchTemplatePrefix = "karpenter.k8s.aws/"

// launchTemplates creates launch templates on first use and reuses them
// for every launch with identical contents (AMI, userData, security
// groups, metadata options, block devices, tags).
type launchTemplates struct {
	p  *Provider
	mu sync.Mutex
	// names maps a template name to its id; the name is a hash of the
	// contents, so a name seen once never needs a check again.
	names map[string]string
	// inflight serializes creation of one template.
	inflight map[string]*sync.Mutex
}

func newLaunchTemplates(p *Provider) *launchTemplates {
	return &launchTemplates{p: p, names: map[string]string{}, inflight: map[string]*sync.Mutex{}}
}

// templateSpec is everything a launch template holds.
type templateSpec struct {
	AMI            string
	UserData       string
	SecurityGroups []string
	Profile        string
	Metadata       *ec2types.LaunchTemplateInstanceMetadataOptionsRequest
	BlockDevices   []ec2types.LaunchTemplateBlockDeviceMappingRequest
	Monitoring     bool
	PublicIP       *bool
	// EFAInterfaces, when positive, attaches that many EFA interfaces, one
	// per network card.
	EFAInterfaces int32
	// CapacityReservation is the reservation launches target;
	// CapacityBlock says it is a capacity block (market type
	// capacity-block).
	CapacityReservation string `json:",omitempty"`
	CapacityBlock       bool   `json:",omitempty"`
	// NoOpenReservations keeps untargeted launches out of open
	// reservations (preference none), so the reservations a node class
	// selects are used only by the launches that count them.
	NoOpenReservations bool `json:",omitempty"`
	// PlacementGroup is the placement group instances launch into.
	PlacementGroup string `json:",omitempty"`
	// ConnectionTracking is the primary interface's connection tracking
	// idle timeouts (spec.connectionTracking).
	ConnectionTracking *ec2types.ConnectionTrackingSpecificationRequest `json:",omitempty"`
	Tags               map[string]string
}

func (s *templateSpec) name() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return launchTemplatePrefix + hex.EncodeToString(sum[:16])
}

// ensure returns the name of the launch template for spec, creating it
// when this process has not seen it.
func (t *launchTemplates) ensure(ctx context.Context, spec *templateSpec, nc *awsv1.EC2NodeClass) (string, error) {
	name := spec.name()
	t.mu.Lock()
	if _, ok := t.names[name]; ok {
		t.mu.Unlock()
		return name, nil
	}
	lock, ok := t.inflight[name]
	if !ok {
		lock = &sync.Mutex{}
		t.inflight[name] = lock
	}
	t.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	t.mu.Lock()
	_, ok = t.names[name]
	t.mu.Unlock()
	if ok {
		return name, nil
	}
	id, err := t.create(ctx, name, spec, nc)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	t.names[name] = id
	t.mu.Unlock()
	return name, nil
}

func (t *launchTemplates) create(ctx context.Context, name string, spec *templateSpec, nc *awsv1.EC2NodeClass) (string, error) {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(spec.AMI),
		UserData:            aws.String(spec.UserData),
		IamInstanceProfile:  &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(spec.Profile)},
		MetadataOptions:     spec.Metadata,
		BlockDeviceMappings: spec.BlockDevices,
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(spec.Monitoring)},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(spec.Tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags(spec.Tags)},
		},
	}
	switch {
	case spec.CapacityReservation != "":
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(spec.CapacityReservation)},
		}
		if spec.CapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	case spec.NoOpenReservations:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		}
	}
	if spec.PlacementGroup != "" {
		data.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String(spec.PlacementGroup)}
	}
	switch {
	case spec.EFAInterfaces > 0:
		data.NetworkInterfaces = efaInterfaces(spec)
	case spec.PublicIP != nil || spec.ConnectionTracking != nil:
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: spec.PublicIP, Groups: spec.SecurityGroups,
		}}
	default:
		data.SecurityGroupIds = spec.SecurityGroups
	}
	if len(data.NetworkInterfaces) > 0 {
		// The primary interface carries the connection tracking timeouts.
		data.NetworkInterfaces[0].ConnectionTrackingSpecification = spec.ConnectionTracking
	}
	out, err := t.p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(t.p.resourceTags(nc, nil))}},
	})
	if err == nil {
		return aws.ToString(out.LaunchTemplate.LaunchTemplateId), nil
	}
	if code := errorCode(err); code == "InvalidLaunchTemplateName.AlreadyExistsException" {
		// Another replica, or this process before a restart, made it.
		desc, derr := t.p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
		if derr == nil && len(desc.LaunchTemplates) == 1 {
			return aws.ToString(desc.LaunchTemplates[0].LaunchTemplateId), nil
		}
	}
	return "", fmt.Errorf("creating launch template %s: %w", name, err)
}

// forget drops a template EC2 said does not exist, so the next launch
// creates it again.
func (t *launchTemplates) forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.names, name)
}

// deleteAll deletes this cluster's launch templates of a node class.
func (t *launchTemplates) deleteAll(ctx context.Context, nodeClass string) error {
	filters := []ec2types.Filter{
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{t.p.opts.ClusterName}},
		{Name: aws.String("tag:" + v1.LabelAWSEC2NodeClass), Values: []string{nodeClass}},
	}
	if t.p.opts.ClusterID != "" {
		filters = append(filters, ec2types.Filter{Name: aws.String("tag:" + TagClusterID), Values: []string{t.p.opts.ClusterID}})
	}
	pages := ec2.NewDescribeLaunchTemplatesPaginator(t.p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: filters})
	var errs []error
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing launch templates of EC2NodeClass %s: %w", nodeClass, err)
		}
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if _, err := t.p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId}); err != nil && !strings.Contains(errorCode(err), "NotFound") {
				errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, err))
				continue
			}
			t.forget(name)
		}
	}
	return errors.Join(errs...)
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// metadataOptions applies Karpenter's defaults: IMDS enabled, IPv6
// endpoint off, hop limit 1, tokens required.
func metadataOptions(m *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		HttpPutResponseHopLimit: aws.Int32(1),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = aws.Int32(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	return out
}

// blockDevices are the node class's mappings, or the family's defaults
// (§3.8): 20Gi gp3 encrypted root for AL2/AL2023, 4Gi root plus a 20Gi
// data volume for Bottlerocket, 50Gi for Windows, the image's own for
// Custom.
func blockDevices(nc *awsv1.EC2NodeClass, family string) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	ebs := func(device string, size string) ec2types.LaunchTemplateBlockDeviceMappingRequest {
		q := resource.MustParse(size)
		return ec2types.LaunchTemplateBlockDeviceMappingRequest{
			DeviceName: aws.String(device),
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(int32(q.Value() >> 30)), VolumeType: ec2types.VolumeTypeGp3,
				Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
			},
		}
	}
	if len(nc.Spec.BlockDeviceMappings) == 0 {
		switch {
		case family == awsv1.AMIFamilyBottlerocket:
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{ebs("/dev/xvda", "4Gi"), ebs("/dev/xvdb", "20Gi")}
		case awsv1.IsWindows(family):
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{ebs("/dev/sda1", "50Gi")}
		case family == awsv1.AMIFamilyCustom:
			return nil
		default:
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{ebs("/dev/xvda", "20Gi")}
		}
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, b := range nc.Spec.BlockDeviceMappings {
		if b == nil {
			continue
		}
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID, SnapshotId: e.SnapshotID,
				VolumeInitializationRate: e.VolumeInitializationRate,
			}
			if e.IOPS != nil {
				m.Ebs.Iops = aws.Int32(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				m.Ebs.Throughput = aws.Int32(int32(*e.Throughput))
			}
			if e.VolumeSize != nil {
				// GiB, rounded up.
				m.Ebs.VolumeSize = aws.Int32(int32((e.VolumeSize.Value() + 1<<30 - 1) >> 30))
			}
			if e.VolumeType != nil {
				m.Ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
		}
		out = append(out, m)
	}
	return out
}

// efaInterfaces are an EFA (with ENA) interface on each of the first
// spec.EFAInterfaces network cards: device 0 on card 0 is the primary
// interface, the others device 1, as Karpenter lays them out.
func efaInterfaces(spec *templateSpec) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, spec.EFAInterfaces)
	for i := range out {
		out[i] = ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(int32(i)), DeviceIndex: aws.Int32(min(int32(i), 1)),
			InterfaceType: aws.String("efa"), Groups: spec.SecurityGroups, DeleteOnTermination: aws.Bool(true),
		}
		if i == 0 {
			out[i].AssociatePublicIpAddress = spec.PublicIP
		}
	}
	return out
}
