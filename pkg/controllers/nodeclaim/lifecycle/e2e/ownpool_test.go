package e2e

import (
	"context"
	"fmt"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// ownPool narrows a cloud to one NodePool's NodeClaims, so a test's
// manager never launches NodeClaims left over from other tests.
type ownPool struct {
	cloudprovider.CloudProvider
	pool string
}

func (o ownPool) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	if nc.Labels[v1.LabelNodePool] != o.pool {
		return nil, cloudprovider.NewCreateError(fmt.Errorf("nodeclaim %s belongs to another test", nc.Name), "OtherTest", "belongs to another test")
	}
	return o.CloudProvider.Create(ctx, nc)
}
