package e2e

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// A GPU instance type boots the NVIDIA variant of the alias, a Neuron
// type the Neuron variant, any other the standard image, as Karpenter
// chooses per instance type (status.amis requirements).
func TestAcceleratedTypesGetTheirVariant(t *testing.T) {
	ctx := context.Background()
	p := newProvider(t, "cluster-a")
	nc := readyNodeClass(t, p, nodeClass(t))
	for _, tc := range []struct {
		typ, variant string
	}{
		{typ: "g4dn.xlarge", variant: "nvidia"},
		{typ: "inf2.xlarge", variant: "neuron"},
		{typ: "m5.large", variant: "standard"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			claim := nodeClaim(t, nc)
			claim.Spec.Requirements[0].Values = []string{tc.typ}
			got, err := p.Create(ctx, claim)
			if err != nil {
				t.Fatal(err)
			}
			want := local.cluster.AMIVariant("AL2023", "x86_64", tc.variant).ID
			if got.Status.ImageID != want {
				t.Errorf("NodeClaim image = %s, want the AL2023 %s image %s", got.Status.ImageID, tc.variant, want)
			}
			if inst := describeInstance(t, got.Status.ProviderID); aws.ToString(inst.ImageId) != want {
				t.Errorf("instance image = %s, want %s", aws.ToString(inst.ImageId), want)
			}
		})
	}
}
