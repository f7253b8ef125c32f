package aws

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

type describer struct {
	cluster *ekstypes.Cluster
	err     error
	calls   int
}

func (d *describer) DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	d.calls++
	return &eks.DescribeClusterOutput{Cluster: d.cluster}, d.err
}

// TestResolveCluster: the service CIDR nodeadm needs is always resolved,
// IPv4 or IPv6, also when CLUSTER_ENDPOINT is set; when it cannot be, the
// error names the setting.
func TestResolveCluster(t *testing.T) {
	ipv4 := &ekstypes.Cluster{Endpoint: aws.String("https://eks.example"), CertificateAuthority: &ekstypes.Certificate{Data: aws.String("Q0E=")},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{IpFamily: ekstypes.IpFamilyIpv4, ServiceIpv4Cidr: aws.String("10.100.0.0/16")}}
	ipv6 := &ekstypes.Cluster{Endpoint: aws.String("https://eks.example"), CertificateAuthority: &ekstypes.Certificate{Data: aws.String("Q0E=")},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{IpFamily: ekstypes.IpFamilyIpv6, ServiceIpv4Cidr: aws.String("10.100.0.0/16"), ServiceIpv6Cidr: aws.String("fd30:1c53:5f8a::/108")}}
	denied := errors.New("AccessDeniedException: not authorized to perform eks:DescribeCluster")
	cases := []struct {
		name         string
		opts         SetupOptions
		api          *describer
		wantEndpoint string
		wantCIDR     string
		wantErr      string
		wantCalls    int
	}{
		{name: "nothing set: all from EKS", api: &describer{cluster: ipv4}, wantEndpoint: "https://eks.example", wantCIDR: "10.100.0.0/16", wantCalls: 1},
		{name: "endpoint set: CIDR still from EKS", opts: SetupOptions{ClusterEndpoint: "https://mine"}, api: &describer{cluster: ipv4},
			wantEndpoint: "https://mine", wantCIDR: "10.100.0.0/16", wantCalls: 1},
		{name: "IPv6 cluster: serviceIpv6Cidr", opts: SetupOptions{ClusterEndpoint: "https://mine"}, api: &describer{cluster: ipv6},
			wantEndpoint: "https://mine", wantCIDR: "fd30:1c53:5f8a::/108", wantCalls: 1},
		{name: "both set: EKS not asked", opts: SetupOptions{ClusterEndpoint: "https://mine", ClusterCIDR: "172.20.0.0/16"}, api: &describer{err: denied},
			wantEndpoint: "https://mine", wantCIDR: "172.20.0.0/16"},
		{name: "CIDR set, endpoint from EKS", opts: SetupOptions{ClusterCIDR: "fd00::/108"}, api: &describer{cluster: ipv4},
			wantEndpoint: "https://eks.example", wantCIDR: "fd00::/108", wantCalls: 1},
		{name: "endpoint set, EKS denied", opts: SetupOptions{ClusterEndpoint: "https://mine"}, api: &describer{err: denied},
			wantErr: "set --cluster-cidr (CLUSTER_CIDR)", wantCalls: 1},
		{name: "nothing set, EKS denied", api: &describer{err: denied}, wantErr: "set --cluster-endpoint (CLUSTER_ENDPOINT) and --cluster-cidr (CLUSTER_CIDR)", wantCalls: 1},
		{name: "EKS answers no network", opts: SetupOptions{ClusterEndpoint: "https://mine"}, api: &describer{cluster: &ekstypes.Cluster{Endpoint: aws.String("x")}},
			wantErr: "answered no service CIDR; set --cluster-cidr (CLUSTER_CIDR)", wantCalls: 1},
		{name: "setting not a CIDR", opts: SetupOptions{ClusterCIDR: "10.100.0.0"}, api: &describer{cluster: ipv4}, wantErr: "cluster-cidr (CLUSTER_CIDR) \"10.100.0.0\" is not a CIDR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.ClusterName = "demo"
			err := resolveCluster(context.Background(), tc.api, &opts)
			if tc.api.calls != tc.wantCalls {
				t.Errorf("DescribeCluster calls = %d, want %d", tc.api.calls, tc.wantCalls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.ClusterEndpoint != tc.wantEndpoint || opts.ClusterCIDR != tc.wantCIDR {
				t.Errorf("endpoint, CIDR = %q, %q; want %q, %q", opts.ClusterEndpoint, opts.ClusterCIDR, tc.wantEndpoint, tc.wantCIDR)
			}
		})
	}
}
