package e2e

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// spec.connectionTracking reaches EC2: the launch template of an instance
// launched for the node class gives its primary interface the timeouts,
// with the node class's security group on it.
func TestConnectionTrackingOnThePrimaryInterface(t *testing.T) {
	ctx := t.Context()
	p := newProvider(t, "cluster-ct")
	nc := readyNodeClass(t, p, nodeClass(t, func(nc *awsv1.EC2NodeClass) {
		nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](120), UDPTimeout: ptr.To[int32](45)}
	}))
	got, err := p.Create(ctx, nodeClaim(t, nc))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Delete(ctx, got) }()
	inst := describeInstance(t, got.Status.ProviderID)
	e := ec2.NewFromConfig(local.server.Config())
	lts, err := e.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + v1.LabelAWSEC2NodeClass), Values: []string{nc.Name}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		ver, err := e.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: lt.LaunchTemplateId})
		if err != nil {
			t.Fatal(err)
		}
		data := ver.LaunchTemplateVersions[0].LaunchTemplateData
		if aws.ToString(data.ImageId) != aws.ToString(inst.ImageId) {
			continue
		}
		if len(data.NetworkInterfaces) != 1 {
			t.Fatalf("launch template %s has interfaces %+v, want the primary one", aws.ToString(lt.LaunchTemplateName), data.NetworkInterfaces)
		}
		ni := data.NetworkInterfaces[0]
		ct := ni.ConnectionTrackingSpecification
		if aws.ToInt32(ni.DeviceIndex) != 0 || len(ni.Groups) != 1 || ni.Groups[0] != local.cluster.SecurityGroupID || ct == nil ||
			aws.ToInt32(ct.TcpEstablishedTimeout) != 120 || aws.ToInt32(ct.UdpTimeout) != 45 || ct.UdpStreamTimeout != nil {
			t.Errorf("primary interface %+v (tracking %+v), want device 0, the node class's group, tcp 120 s and udp 45 s", ni, ct)
		}
		return
	}
	t.Fatalf("no launch template of node class %s launched image %s", nc.Name, aws.ToString(inst.ImageId))
}
