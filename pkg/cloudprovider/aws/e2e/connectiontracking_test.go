package e2e

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
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
	templates := launchTemplatesOf(t, nc.Name, aws.ToString(inst.ImageId))
	if len(templates) == 0 {
		t.Fatalf("no launch template of node class %s launched image %s", nc.Name, aws.ToString(inst.ImageId))
	}
	data := templates[0]
	if len(data.NetworkInterfaces) != 1 {
		t.Fatalf("the launch template has interfaces %+v, want the primary one", data.NetworkInterfaces)
	}
	ni := data.NetworkInterfaces[0]
	ct := ni.ConnectionTrackingSpecification
	if aws.ToInt32(ni.DeviceIndex) != 0 || len(ni.Groups) != 1 || ni.Groups[0] != local.cluster.SecurityGroupID || ct == nil ||
		aws.ToInt32(ct.TcpEstablishedTimeout) != 120 || aws.ToInt32(ct.UdpTimeout) != 45 || ct.UdpStreamTimeout != nil {
		t.Errorf("primary interface %+v (tracking %+v), want device 0, the node class's group, tcp 120 s and udp 45 s", ni, ct)
	}
}
