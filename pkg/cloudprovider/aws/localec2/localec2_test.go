package localec2

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestStartSeedStop(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }() // Stop kills moto_server and always returns nil
	cfg := srv.Config()
	cl, err := Seed(ctx, cfg, SeedOptions{ClusterName: "alpha", KubernetesVersions: []string{"1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	// 6 standard images, AL2023 nvidia x2 and neuron, AL2 gpu, Bottlerocket nvidia x2.
	if len(cl.Subnets) != 3 || len(cl.AMIs) != 12 || cl.SecurityGroupID == "" {
		t.Fatalf("seeded %+v, want 3 subnets, 12 images and a security group", cl)
	}
	e := ec2.NewFromConfig(cfg)
	subnets, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:" + TagDiscovery), Values: []string{"alpha"}}}})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, s := range subnets.Subnets {
		zones[aws.ToString(s.AvailabilityZone)] = true
	}
	if len(zones) != 3 {
		t.Errorf("discovery-tagged subnets span zones %v, want 3", zones)
	}
	for _, arch := range Architectures {
		ami := cl.AMI("AL2023", arch)
		out, err := e.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{ami.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out.Images[0].Architecture); got != arch {
			t.Errorf("image %s architecture = %q, want %q", ami.Name, got, arch)
		}
		p, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(AliasParameters(DefaultParameterRoot, "AL2023", arch, "1.36")[0])})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(p.Parameter.Value) != ami.ID {
			t.Errorf("alias parameter for %s = %s, want %s", arch, aws.ToString(p.Parameter.Value), ami.ID)
		}
		nvidia := cl.AMIVariant("AL2023", arch, "nvidia")
		name := "/joiner-local/service/eks/optimized-ami/1.36/amazon-linux-2023/" + arch + "/nvidia/recommended/image_id"
		if p, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); err != nil || aws.ToString(p.Parameter.Value) != nvidia.ID {
			t.Errorf("parameter %s: %v, want %s", name, err, nvidia.ID)
		}
	}
	if _, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(cl.RoleName)}); err != nil {
		t.Errorf("node role: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}); err == nil {
		t.Error("the server still answers after Stop")
	}
}

func TestStartWithoutMotoSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "pip install 'moto[server]'") {
		t.Fatalf("Start without moto_server = %v, want an error naming the install command", err)
	}
}

func TestSubnetCIDRs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vpc    string
		prefix int
		n      int
		want   []string
		err    bool
	}{
		{name: "twenties", vpc: "10.0.0.0/16", prefix: 20, n: 3, want: []string{"10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20"}},
		{name: "tiny", vpc: "10.1.0.0/16", prefix: 28, n: 2, want: []string{"10.1.0.0/28", "10.1.0.16/28"}},
		{name: "too many", vpc: "10.0.0.0/24", prefix: 25, n: 3, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := subnetCIDRs(tc.vpc, tc.prefix, tc.n)
			if tc.err {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("subnet %d = %s, want %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}
