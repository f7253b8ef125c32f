package disruption

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// buildInput assembles the engine's Input: the live model's snapshot of
// the cluster, every managed node the snapshot holds (priced from its
// NodePool's instance types), every NodePool and PodDisruptionBudget.
// NodePools whose drift is halted are named in PausedDrift.
func (c *Controller) buildInput(ctx context.Context) (*disruption.Input, error) {
	snap, err := c.opts.Model.Build(ctx)
	if err != nil {
		return nil, err
	}
	var (
		pools v1.NodePoolList
		pdbs  policyv1.PodDisruptionBudgetList
	)
	if err := c.opts.Client.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	if err := c.opts.Client.List(ctx, &pdbs); err != nil {
		return nil, fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	now := c.opts.Clock.Now()
	in := &disruption.Input{
		Now:           now,
		Cluster:       snap.Cluster,
		InstanceTypes: snap.InstanceTypes,
		NodePools:     map[string]*v1.NodePool{},
		Options:       disruption.Options{SpotToSpot: c.opts.SpotToSpot, MinSavingsFraction: c.opts.MinSavingsFraction, Scheduling: c.opts.Scheduling, Scoring: c.opts.Scoring},
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		if why, err := c.driftHalted(ctx, np, now); err != nil {
			return nil, err
		} else if why != "" {
			if in.PausedDrift == nil {
				in.PausedDrift = map[string]string{}
			}
			in.PausedDrift[np.Name] = why
		}
		in.NodePools[np.Name] = np
	}
	for i := range pdbs.Items {
		in.PDBs = append(in.PDBs, &pdbs.Items[i])
	}
	// The engine matches Nodes to the snapshot by name; the state may have
	// moved on since the snapshot was taken, so only nodes in both count.
	// NodeClaims of node classes joiner does not serve stay in the
	// snapshot (their pods still count) but are never candidates.
	inSnapshot := map[string]bool{}
	for _, en := range snap.Cluster.Nodes {
		inSnapshot[en.Name] = true
	}
	for _, sn := range c.opts.State.ReadOnlyNodes() {
		if sn.NodeClaim == nil || !inSnapshot[sn.Name()] || !c.nodeClasses.Manages(sn.NodeClaim.Spec.NodeClassRef) {
			continue
		}
		in.Nodes = append(in.Nodes, c.node(sn, snap.InstanceTypes[sn.NodePool()]))
	}
	return in, nil
}

// node is the engine's view of one managed node.
func (c *Controller) node(sn *state.StateNode, its []*scheduling.InstanceType) disruption.Node {
	return disruption.NodeOf(disruption.Observed{
		Name:              sn.Name(),
		NodePool:          sn.NodePool(),
		Labels:            sn.Labels(),
		Initialized:       sn.Initialized(),
		Node:              sn.Node,
		NodeClaim:         sn.NodeClaim,
		Pods:              sn.Pods,
		MarkedForDeletion: sn.MarkedForDeletion,
		// A command's replacement in flight is held as a nominated node
		// is (no candidate, not counted against budgets): the candidates'
		// pods are bound for it.
		Nominated: sn.Nominated() || c.queue.Replaces(sn.NodeClaim.Name),
		Queued:    c.queue.Has(sn.Name()),
	}, its, c.opts.Scheduling.ListPrices)
}
