package userdata

import (
	"context"
	"testing"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/nodeadm"
)

// judge runs the AL2023 image's own nodeadm init on raw user data.
func judge(t *testing.T, raw []byte) error {
	t.Helper()
	ctx := context.Background()
	bin, err := nodeadm.Binary(ctx)
	if err != nil {
		t.Fatalf("nodeadm: %v", err)
	}
	return nodeadm.Init(ctx, bin, localec2.InstanceMetadata{
		InstanceID: "i-0123456789abcdef0", InstanceType: "m5.large", ImageID: "ami-0123456789abcdef0", Region: "us-east-1",
		AvailabilityZone: "us-east-1a", Architecture: "x86_64", PrivateIP: "10.0.0.10", MAC: "0e:00:00:00:00:01", UserData: raw,
	})
}

// TestNodeadmAcceptsAL2023 runs the real nodeadm on every AL2023 user data
// the golden cases render, IPv4 and IPv6, and on the cases it must refuse
// with its own reasons.
func TestNodeadmAcceptsAL2023(t *testing.T) {
	cases := []struct {
		name   string
		opts   Options
		refuse string
	}{
		{name: "ipv4", opts: base(awsv1.AMIFamilyAL2023)},
		{name: "ipv6", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.ClusterCIDR = "fd30:1c53:5f8a::/108" })},
		{name: "kubelet and raid0", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.Kubelet = kubelet() })},
		{name: "user NodeConfig", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.CustomUserData = &[]string{userNodeConfig}[0] })},
		{name: "no CIDR", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.ClusterCIDR = "" }), refuse: "CIDR is missing in cluster configuration"},
		{name: "no CA", opts: with(base(awsv1.AMIFamilyAL2023), func(o *Options) { o.CABundle = "" }), refuse: "Certificate authority is missing in cluster configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := Render(tc.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			err = judge(t, raw)
			switch {
			case tc.refuse == "" && err != nil:
				t.Fatalf("nodeadm refuses joiner's user data: %v\n%s", err, raw)
			case tc.refuse != "" && !nodeadm.IsRefusal(err):
				t.Fatalf("nodeadm accepted (or could not judge) user data it must refuse with %q: %v", tc.refuse, err)
			case tc.refuse != "" && err.(*nodeadm.Refusal).Reason != tc.refuse:
				t.Fatalf("nodeadm refused with %q, want %q", err.(*nodeadm.Refusal).Reason, tc.refuse)
			}
		})
	}
}
