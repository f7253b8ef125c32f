package observability

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

type instanceTypesFunc func(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error)

func (f instanceTypesFunc) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	return f(ctx, np)
}

// TestUpdateInstanceTypesQuietWhileNotReady: a node class that is not ready
// and NodeOverlays not evaluated yet (the first second after start-up) are
// states other objects report; the gauges skip the NodePool without an
// error, which would be logged every interval. Any other error is one.
func TestUpdateInstanceTypesQuietWhileNotReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"node class not ready", cloudprovider.NewNodeClassNotReadyError(errors.New("no subnets")), false},
		{"overlays not evaluated", fmt.Errorf("nodepool default: %w", overlay.ErrNotEvaluated), false},
		{"cloud error", errors.New("DescribeInstanceTypes: throttled"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{opts: Options{InstanceTypes: instanceTypesFunc(func(context.Context, *v1.NodePool) ([]*scheduling.InstanceType, error) {
				return nil, tc.err
			})}}
			byPool, err := c.updateInstanceTypes(t.Context(), []v1.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}})
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want an error: %v", err, tc.wantErr)
			}
			if len(byPool) != 0 {
				t.Errorf("instance types %v for a NodePool whose listing failed", byPool)
			}
		})
	}
}
