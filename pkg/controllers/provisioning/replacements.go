package provisioning

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Snapshot is the provisioner's picture of the cluster, for the other
// deciders that must see exactly what provisioning sees (disruption
// simulates consolidation on it): one adapter, so a consolidation never
// relies on capacity the provisioner would not find.
type Snapshot struct {
	// Cluster is the solver's Snapshot: nodes and in-flight NodeClaims with
	// their bound and nominated pods, the pending pods, the usable
	// NodePools with their live usage, their instance types, DaemonSets and
	// volumes.
	Cluster *scheduling.Snapshot
	// NodePools are the NodePools the solver may launch from, by name.
	NodePools map[string]*v1.NodePool
	// InstanceTypes are every NodePool's instance types, including
	// NodePools the solver may not launch from now (not ready, deleting):
	// their existing nodes are still priced from them.
	InstanceTypes map[string][]*scheduling.InstanceType
	// Skipped says why a NodePool is not in Cluster.NodePools.
	Skipped map[string]string
}

// Snapshot builds the Snapshot a provisioning pass would plan on now.
func (p *Provisioner) Snapshot(ctx context.Context) (*Snapshot, error) {
	v, err := p.buildView(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshotting cluster: %w", err)
	}
	return &Snapshot{Cluster: v.snapshot, NodePools: v.nodePools, InstanceTypes: v.allTypes, Skipped: v.skipped}, nil
}

// CreateReplacements creates the NodeClaims a disruption command launches
// before it deletes its candidates, exactly as a provisioning pass creates
// planned ones (NewNodeClaim, deterministic names, the in-flight memory);
// reason labels karpenter_nodeclaims_created_total (e.g. "underutilized").
// As for a provisioning plan, the solver already kept limits (the
// command's simulation removed the candidates whose capacity the
// replacements take over) and the instance-type cap. created[i] is nil
// where creating planned[i] failed.
func (p *Provisioner) CreateReplacements(ctx context.Context, nodePools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string) ([]*v1.NodeClaim, error) {
	claims := make([]plannedClaim, 0, len(planned))
	var errs []error
	for _, nc := range planned {
		np, ok := nodePools[nc.NodePool]
		if !ok {
			errs = append(errs, fmt.Errorf("replacement names nodepool %q, which may not launch now", nc.NodePool))
			continue
		}
		claims = append(claims, plannedClaim{nodePool: np, planned: nc, reason: reason})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p.createAll(ctx, claims)
}
