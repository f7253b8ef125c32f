package static

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/klog/v2"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
)

// scaleDown deletes np's surplus NodeClaims in disruption.ScaleDownOrder.
// Deleting a NodeClaim drains its node through the Eviction API (PDBs
// hold it) before the instance goes; node budgets do not apply, as in
// Karpenter: the user asked for fewer nodes.
func (c *Controller) scaleDown(ctx context.Context, np *v1.NodePool, nodes []disruption.Node, surplus int) (reconcile.Result, error) {
	order := disruption.ScaleDownOrder(nodes, np.Name, c.opts.Clock.Now())
	byName := make(map[string]*disruption.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	log.FromContext(ctx).Info("deprovisioning nodeclaims to satisfy replica count", logging.NodePool, klog.KObj(np),
		logging.Current, *np.Spec.Replicas+int64(surplus), logging.Desired, *np.Spec.Replicas, logging.DeprovisionCount, surplus)
	var deleted []string
	var errs []error
	for _, name := range order[:min(surplus, len(order))] {
		nc := byName[name].NodeClaim
		// Only the object counted: one recreated under the name is not it.
		err := c.opts.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		c.mu.Lock()
		c.deleted[nc.UID] = c.opts.Clock.Now()
		c.mu.Unlock()
		deleted = append(deleted, nc.Name)
	}
	if len(deleted) > 0 {
		c.opts.Recorder.Publish(events.Normal(np, events.ScaledDown, "Scale",
			"Deleting NodeClaim(s) %s to bring static NodePool %s down to %d replicas (unlaunched first, then empty nodes, then the lowest disruption cost; PDBs hold the drain)",
			strings.Join(deleted, ", "), np.Name, *np.Spec.Replicas))
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, fmt.Errorf("scaling down static nodepool %s: %w", np.Name, err)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}
