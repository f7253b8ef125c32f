package cloudprovider

import (
	"context"
	"errors"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// GroupLauncher is the optional part of a cloud that can launch several
// NodeClaims' instances in one all-or-nothing call (EC2's instant fleet
// with MinTargetCapacity). A ProvisioningRequest's gang is launched this
// way when its NodeClaims can share one instance type and zone, so a gang
// that cannot be had whole costs nothing.
type GroupLauncher interface {
	// CreateGroup launches one instance for each NodeClaim, every one or
	// none. On success each instance is the NodeClaim's, by its UID, as if
	// Create had launched it: Create for that NodeClaim returns it
	// (hydrated) instead of launching another. It returns
	// InsufficientCapacityError when the cloud cannot give all of them (and
	// then no instance is left running), and a plain error when the
	// NodeClaims cannot be launched as one group (no instance type and
	// zone every one of them allows); the caller then launches them one by
	// one and rolls back on failure.
	CreateGroup(ctx context.Context, nodeClaims []*v1.NodeClaim) error
}

// errNoGroupLaunch is CreateGroup's answer for a cloud that cannot launch
// groups: the caller launches the NodeClaims one by one.
var errNoGroupLaunch = errors.New("the cloud provider cannot launch a group in one call")

// CreateGroup forwards to the wrapped provider, timed like every call; a
// provider that is not a GroupLauncher gets a plain error, so the caller
// launches one by one.
func (i *instrumented) CreateGroup(ctx context.Context, nodeClaims []*v1.NodeClaim) error {
	g, ok := i.next.(GroupLauncher)
	if !ok {
		return errNoGroupLaunch
	}
	start := i.clock.Now()
	err := g.CreateGroup(ctx, nodeClaims)
	i.observe(ctx, "CreateGroup", start, err)
	return err
}
