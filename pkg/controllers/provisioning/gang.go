package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// PlanGang plans pods as one unit on the live model a batch would see now
// (existing nodes and in-flight NodeClaims with their pods and bookings,
// NodePools with their instance types and back-offs), leaving the batch's
// own pending pods out: the gang is planned for alone, before them. With
// existingOnly the NodePools are left out too, so the plan says whether the
// pods fit the capacity that exists (check-capacity). It runs between
// batches, never during one, so two plans never count the same room.
func (p *Provisioner) PlanGang(ctx context.Context, pods []*corev1.Pod, existingOnly bool) (*livemodel.Gang, error) {
	p.passMu.Lock()
	defer p.passMu.Unlock()
	v, err := p.opts.Model.Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshotting cluster: %w", err)
	}
	v.Cluster.Pods = pods
	if existingOnly {
		v.Cluster.NodePools = nil
		v.Cluster.InstanceTypes = map[string][]*scheduling.InstanceType{}
	}
	plan, err := p.opts.Solve(v.Cluster)
	if err != nil {
		return nil, fmt.Errorf("solving for %d pods: %w", len(pods), err)
	}
	return &livemodel.Gang{Plan: plan, Snapshot: v}, nil
}

// CreateGang creates the NodeClaims g's plan launches, each changed by
// mutate first (labels and annotations tying it to its request), and
// returns them. It creates all or none: when one fails, those created are
// deleted before the error is returned.
func (p *Provisioner) CreateGang(ctx context.Context, g *livemodel.Gang, mutate func(*v1.NodeClaim)) ([]*v1.NodeClaim, error) {
	p.passMu.Lock()
	defer p.passMu.Unlock()
	claims, err := p.claimsFor(g.Snapshot, g.Plan.NewNodeClaims)
	if err != nil {
		return nil, err
	}
	for i := range claims {
		claims[i].Reason = "provisioningrequest"
		claims[i].Mutate = mutate
	}
	created, err := p.opts.NodeClaims.Create(ctx, claims)
	var made []*v1.NodeClaim
	for _, nc := range created {
		if nc != nil {
			made = append(made, nc)
		}
	}
	if err == nil && len(made) != len(claims) {
		err = fmt.Errorf("created %d of %d nodeclaims", len(made), len(claims))
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating the gang's nodeclaims: %w", err), p.deleteAll(ctx, made))
	}
	return made, nil
}

// deleteAll deletes the NodeClaims (the lifecycle terminates what they
// launched).
func (p *Provisioner) deleteAll(ctx context.Context, ncs []*v1.NodeClaim) error {
	var errs []error
	for _, nc := range ncs {
		if err := p.opts.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}
