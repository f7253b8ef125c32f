package sim

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
)

var _ cloudprovider.GroupLauncher = (*Provider)(nil)

// CreateGroup implements cloudprovider.GroupLauncher the way EC2's instant
// fleet with MinTargetCapacity behaves: one offering (instance type, zone,
// capacity type) that every NodeClaim allows, cheapest first, and either
// every instance launches in it or none does. An offering under an
// insufficient-capacity fault (or a subnet out of addresses) gives none, and
// the next common offering is tried; when none is left the error is
// InsufficientCapacityError. NodeClaims already launched (by UID) count as
// launched, so a retried call launches only the rest.
func (p *Provider) CreateGroup(ctx context.Context, nodeClaims []*v1.NodeClaim) error {
	if len(nodeClaims) == 0 {
		return nil
	}
	ref := nodeClaims[0].Spec.NodeClassRef
	for _, nc := range nodeClaims[1:] {
		if nc.Spec.NodeClassRef == nil || ref == nil || *nc.Spec.NodeClassRef != *ref {
			return errors.New("the nodeclaims use different node classes, so they cannot launch as one group")
		}
	}
	nc, err := p.nodeClass(ctx, ref)
	if err != nil {
		return err
	}
	if err := p.dice.callError(); err != nil {
		return err
	}
	var todo []*v1.NodeClaim
	for _, claim := range nodeClaims {
		existing, err := p.launchedFor(claim)
		if err != nil {
			return err
		}
		if existing == nil {
			todo = append(todo, claim)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	catalog, err := p.opts.Catalog(nc)
	if err != nil {
		return fmt.Errorf("resolving catalog %q of SimNodeClass %s: %w", nc.Spec.Catalog.Name, nc.Name, err)
	}
	types := p.filtered.get(catalog, nc)
	common := offering.Candidates(types, todo[0].Spec.Requirements, todo[0].Spec.Resources.Requests)
	for _, claim := range todo[1:] {
		allowed := map[string]bool{}
		for _, c := range offering.Candidates(types, claim.Spec.Requirements, claim.Spec.Resources.Requests) {
			allowed[c.String()] = true
		}
		kept := common[:0:0]
		for _, c := range common {
			if allowed[c.String()] {
				kept = append(kept, c)
			}
		}
		common = kept
	}
	if len(common) == 0 {
		return fmt.Errorf("no offering (instance type, zone, capacity type) of SimNodeClass %s is allowed by all %d nodeclaims", nc.Name, len(todo))
	}
	var failed []offering.Candidate
	for _, c := range common {
		if p.unavailable.isUnavailable(nc.Name, c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType) {
			failed = append(failed, c)
			continue
		}
		if refused, _ := p.faultRefuses(nc, c); refused {
			failed = append(failed, c)
			continue
		}
		if err := p.dice.capacityError(c.String()); err != nil {
			p.unavailable.markOffering(c.InstanceType.Name, c.Offering.Zone, c.Offering.CapacityType)
			failed = append(failed, c)
			continue
		}
		return p.launchAll(ctx, nc.Name, todo, func(claim *v1.NodeClaim) (*Instance, error) { return p.launch(claim, nc, c) })
	}
	return cloudprovider.NewInsufficientCapacityError(fmt.Errorf(
		"InsufficientInstanceCapacity: no offering allowed by all %d nodeclaims has capacity for all of them at once (SimNodeClass %s), so none was launched",
		len(todo), nc.Name), offering.Describe(failed)...)
}

// launchAll launches every NodeClaim, or, when one fails, terminates those
// it launched and returns the error.
func (p *Provider) launchAll(ctx context.Context, nodeClass string, claims []*v1.NodeClaim, launch func(*v1.NodeClaim) (*Instance, error)) error {
	var done []*v1.NodeClaim
	for _, claim := range claims {
		inst, err := launch(claim)
		if err != nil {
			var errs []error
			for _, d := range done {
				errs = append(errs, p.Delete(ctx, d))
			}
			return errors.Join(fmt.Errorf("launching the group of SimNodeClass %s: %w", nodeClass, err), cloudprovider.IgnoreNodeClaimNotFoundError(errors.Join(errs...)))
		}
		launched := claim.DeepCopy()
		launched.Status.ProviderID = p.hydrate(inst).Status.ProviderID
		done = append(done, launched)
	}
	return nil
}
