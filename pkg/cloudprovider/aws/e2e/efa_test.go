package e2e

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsprovider "github.com/joiner-dev/joiner/pkg/cloudprovider/aws"
)

// A NodeClaim that requests vpc.amazonaws.com/efa gets, as with Karpenter,
// an EFA interface on every network card its type supports (p4d.24xlarge:
// four), written into its launch template; one that does not gets none.
func TestEFAInterfacesAttached(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	for _, tc := range []struct {
		name string
		efa  int64
		want int
	}{
		{name: "EFA requested", efa: 1, want: 4},
		{name: "no EFA requested", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := nodeClaim(t, nc)
			claim.Spec.Requirements[0].Values = []string{"p4d.24xlarge"}
			if tc.efa > 0 {
				claim.Spec.Resources.Requests[awsprovider.ResourceEFA] = *resource.NewQuantity(tc.efa, resource.DecimalSI)
			}
			got, err := p.Create(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			if q := got.Status.Capacity[awsprovider.ResourceEFA]; q.Value() != 4 {
				t.Errorf("capacity %s = %v, want 4", awsprovider.ResourceEFA, q.String())
			}
			inst := describeInstance(t, got.Status.ProviderID)
			var efas []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecification
			found := false
			for _, data := range launchTemplatesOf(t, nc.Name, aws.ToString(inst.ImageId)) {
				var these []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecification
				for _, ni := range data.NetworkInterfaces {
					if aws.ToString(ni.InterfaceType) == "efa" {
						these = append(these, ni)
					}
				}
				if len(these) == tc.want {
					found, efas = true, these
				}
			}
			if !found {
				t.Fatalf("no launch template of node class %s has %d EFA interfaces", nc.Name, tc.want)
			}
			for i, ni := range efas {
				if aws.ToInt32(ni.NetworkCardIndex) != int32(i) || aws.ToInt32(ni.DeviceIndex) != min(int32(i), 1) || len(ni.Groups) != 1 || ni.Groups[0] != local.cluster.SecurityGroupID {
					t.Errorf("EFA interface %d = card %d device %d groups %v; want card %d, device %d, the node class's group", i,
						aws.ToInt32(ni.NetworkCardIndex), aws.ToInt32(ni.DeviceIndex), ni.Groups, i, min(i, 1))
				}
			}
		})
	}
}
