package cloudprovider

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Instrument wraps cp so every call is timed in
// karpenter_cloudprovider_duration_seconds and every failure counted in
// karpenter_cloudprovider_errors_total, by the calling controller (named
// on the context by metrics.WithController), method, provider and error
// kind.
// clk defaults to the real clock.
func Instrument(cp CloudProvider, clk clock.PassiveClock) CloudProvider {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &instrumented{next: cp, clock: clk}
}

type instrumented struct {
	next  CloudProvider
	clock clock.PassiveClock
}

// ErrorKind names an error's class for metrics: "" for nil, then
// InsufficientCapacity, NotFound, NotOwned, NodeClassNotReady, CreateError or Other.
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case IsInsufficientCapacityError(err):
		return "InsufficientCapacity"
	case IsNodeClaimNotFoundError(err):
		return "NotFound"
	case IsNodeClaimNotOwned(err):
		return "NotOwned"
	case IsNodeClassNotReadyError(err):
		return "NodeClassNotReady"
	case IsCreateError(err):
		return "CreateError"
	}
	return "Other"
}

func (i *instrumented) observe(ctx context.Context, method string, start time.Time, err error) {
	metrics.ObserveCloudProviderCall(metrics.ControllerFrom(ctx), method, i.next.Name(), i.clock.Since(start).Seconds(), ErrorKind(err))
}

func (i *instrumented) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	start := i.clock.Now()
	out, err := i.next.Create(ctx, nc)
	i.observe(ctx, "Create", start, err)
	return out, err
}

func (i *instrumented) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	start := i.clock.Now()
	err := i.next.Delete(ctx, nc)
	i.observe(ctx, "Delete", start, err)
	return err
}

func (i *instrumented) Get(ctx context.Context, providerID string) (*v1.NodeClaim, error) {
	start := i.clock.Now()
	out, err := i.next.Get(ctx, providerID)
	i.observe(ctx, "Get", start, err)
	return out, err
}

func (i *instrumented) List(ctx context.Context) ([]*v1.NodeClaim, error) {
	start := i.clock.Now()
	out, err := i.next.List(ctx)
	i.observe(ctx, "List", start, err)
	return out, err
}

func (i *instrumented) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*scheduling.InstanceType, error) {
	start := i.clock.Now()
	out, err := i.next.GetInstanceTypes(ctx, np)
	i.observe(ctx, "GetInstanceTypes", start, err)
	return out, err
}

func (i *instrumented) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (DriftReason, error) {
	start := i.clock.Now()
	out, err := i.next.IsDrifted(ctx, nc)
	i.observe(ctx, "IsDrifted", start, err)
	return out, err
}

func (i *instrumented) Name() string { return i.next.Name() }

func (i *instrumented) GetSupportedNodeClasses() []client.Object {
	return i.next.GetSupportedNodeClasses()
}
