package static

import (
	"context"
	"fmt"
	"k8s.io/klog/v2"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/nodepool"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// scaleUp creates the NodeClaims np lacks: replicas less its active and
// disrupting NodeClaims (a drifted node being replaced still counts until
// its replacement takes over), within limits.nodes, which counts deleting
// NodeClaims too. A NodePool that is not Ready launches nothing yet.
func (c *Controller) scaleUp(ctx context.Context, np *v1.NodePool, count disruption.StaticCount) (reconcile.Result, error) {
	if !np.StatusConditions().IsTrue(v1.ConditionTypeReady) {
		return reconcile.Result{RequeueAfter: blockedRequeue}, nil
	}
	want := *np.Spec.Replicas - int64(count.Active+count.Disrupting)
	if limit, ok := np.Spec.Limits[v1.ResourceNodes]; ok {
		room := limit.Value() - int64(count.Active+count.Disrupting+count.Deleting)
		if room < want {
			want = max(room, 0)
			log.FromContext(ctx).Info("static nodepool held back by its node limit", logging.NodePool, klog.KObj(np), logging.Limit, limit.Value(), logging.Replicas, *np.Spec.Replicas)
		}
	}
	if want == 0 {
		return reconcile.Result{RequeueAfter: blockedRequeue}, nil
	}
	its, err := c.opts.InstanceTypes.GetInstanceTypes(ctx, np)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err)
	}
	template := nodepool.StaticNodeClaim(np, its)
	if template == nil {
		c.opts.Recorder.Publish(events.Warning(np, events.NoCompatibleInstanceTypes, "Scale",
			"NodePool %s: no instance type meets its requirements with an available offering, so none of its %d replicas can launch; widen its requirements or check its node class", np.Name, *np.Spec.Replicas))
		return reconcile.Result{RequeueAfter: blockedRequeue}, nil
	}
	planned := make([]*scheduling.NewNodeClaim, want)
	for i := range planned {
		planned[i] = template
	}
	log.FromContext(ctx).Info("provisioning nodeclaims to satisfy replica count", logging.NodePool, klog.KObj(np),
		logging.Current, count.Active+count.Disrupting, logging.Desired, *np.Spec.Replicas, logging.ProvisionCount, want)
	// A scale-up replaces nothing (and its NodeClaims, without pods, get
	// generated names).
	created, err := c.opts.Creator.CreateReplacements(ctx, map[string]*v1.NodePool{np.Name: np}, planned, ProvisionedReason, nil)
	n := 0
	for _, nc := range created {
		if nc != nil {
			n++
		}
	}
	if n > 0 {
		c.opts.Recorder.Publish(events.Normal(np, events.ScaledUp, "Scale",
			"Created %d NodeClaim(s) to bring static NodePool %s from %d to %d replicas", n, np.Name, count.Active+count.Disrupting, *np.Spec.Replicas))
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("creating nodeclaims for static nodepool %s: %w", np.Name, err)
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}
