package overlay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Store holds the overlays in force: what the NodeOverlay controller last
// evaluated without conflict. It is safe for concurrent use.
type Store struct {
	mu        sync.RWMutex
	evaluated bool
	overlays  []*v1alpha1.NodeOverlay
}

// Set replaces the overlays in force (nil: none, as while a conflict
// stands) and marks the store evaluated.
func (s *Store) Set(overlays []*v1alpha1.NodeOverlay) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evaluated, s.overlays = true, Order(overlays)
}

// Get returns the overlays in force and whether they were evaluated yet.
func (s *Store) Get() ([]*v1alpha1.NodeOverlay, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.overlays, s.evaluated
}

// ErrNotEvaluated is GetInstanceTypes' error until the overlays were first
// evaluated: planning with a NodePool before would launch at the wrong
// prices, so the NodePool is skipped for that moment, as Karpenter's are.
var ErrNotEvaluated = errors.New("its NodeOverlays have not been evaluated yet")

// CloudProvider is a cloud whose GetInstanceTypes returns the instance
// types with the overlays in force applied: the provisioner, static
// NodePools, consolidation, the status page and explain all read instance
// types through it. Launches (Create) go to the cloud as they are; the
// NodeClaim's overlay annotation tells it to launch in the NodeClaim's
// order.
type CloudProvider struct {
	cloudprovider.CloudProvider
	Store *Store
}

// NewCloudProvider decorates cp with the overlays in store.
func NewCloudProvider(cp cloudprovider.CloudProvider, store *Store) *CloudProvider {
	return &CloudProvider{CloudProvider: cp, Store: store}
}

// GetInstanceTypes returns the cloud's instance types for nodePool with the
// overlays applied.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error) {
	overlays, evaluated := c.Store.Get()
	if !evaluated {
		return nil, fmt.Errorf("nodepool %s: %w", nodePool.Name, ErrNotEvaluated)
	}
	its, err := c.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, err
	}
	return Apply(overlays, nodePool, its), nil
}

// RepairPolicies are the decorated cloud's (node repair asks for them).
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.RepairPoliciesOf(c.CloudProvider)
}
