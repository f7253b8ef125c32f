package observability

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/overlay"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// DefaultInterval is how often the gauges are recomputed.
const DefaultInterval = 5 * time.Second

// controllerName labels the cloud provider calls this controller makes.
const controllerName = "metrics.observability"

// Cluster is the part of the cluster state the gauges are read from.
type Cluster interface {
	// ReadOnlyNodes are the tracked nodes, not copied: the controller
	// only reads them.
	ReadOnlyNodes() []*state.StateNode
	NodePoolUsage() state.Usage
}

// Decisions publishes the provisioner's decision times as the
// karpenter_pods_provisioning_* metrics (state.Nominations).
type Decisions interface {
	PublishDecisions(pods []*corev1.Pod, now time.Time)
}

// InstanceTypes lists a NodePool's instance types (the cloud provider).
type InstanceTypes interface {
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*scheduling.InstanceType, error)
}

// AllPods lists every pod as the informer cache holds it
// (state.PodCache), without copying them.
type AllPods interface {
	All(ctx context.Context) ([]*corev1.Pod, error)
}

// Options configure the controller.
type Options struct {
	Client client.Client
	// Pods, when set, is where each interval reads every pod from without
	// a copy; unset, they are listed through Client (a Pod struct copied
	// per pod and interval).
	Pods    AllPods
	Cluster Cluster
	// Decisions, when set, publishes the provisioning latencies of every
	// pod each interval.
	Decisions     Decisions
	InstanceTypes InstanceTypes
	Clock         clock.Clock
	// Interval between two recomputations (0: DefaultInterval).
	Interval time.Duration
}

// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Controller recomputes the gauges on a timer.
type Controller struct {
	opts Options
	// started and bound hold the pods whose startup and binding latencies
	// were observed, so each pod counts once.
	started, bound map[types.UID]bool
	// The per-pod series, set every interval (see metrics.Series).
	podsState, podsUnbound, podsUnstarted *metrics.Series
	// The per-node series, set the same way: nodeResources in the order
	// of nodeResourceGauges, and each node's lifetime.
	nodeResources []*metrics.Series
	nodesLifetime *metrics.Series
}

// nodeResourceGauges are the per-node, per-resource gauges, in the order
// updateNodes sets them.
func nodeResourceGauges() []*metrics.Series {
	return []*metrics.Series{
		metrics.NodesAllocatable, metrics.NodesSystemOverhead,
		metrics.NodesTotalPodRequests, metrics.NodesTotalPodLimits,
		metrics.NodesTotalDaemonRequests, metrics.NodesTotalDaemonLimits,
	}
}

// NewController validates opts.
func NewController(opts Options) (*Controller, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if opts.Cluster == nil {
		errs = append(errs, errors.New("cluster state is required"))
	}
	if opts.InstanceTypes == nil {
		errs = append(errs, errors.New("instance types are required"))
	}
	if opts.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return newController(opts), nil
}

// newController builds the controller of valid opts.
func newController(opts Options) *Controller {
	c := &Controller{opts: opts, started: map[types.UID]bool{}, bound: map[types.UID]bool{},
		podsState: metrics.PodsState, podsUnbound: metrics.PodsUnboundTime, podsUnstarted: metrics.PodsUnstartedTime,
		nodesLifetime: metrics.NodesCurrentLifetime, nodeResources: nodeResourceGauges()}
	return c
}

// Register adds the controller to the manager, on the leader only (the
// cluster state is the leader's).
func (c *Controller) Register(mgr manager.Manager) error {
	return mgr.Add(c)
}

// NeedLeaderElection runs the controller on the leader only.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start recomputes the gauges every interval until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	ctx = metrics.WithController(ctx, controllerName)
	for {
		if err := c.Update(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "updating cluster state metrics")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.opts.Clock.After(c.opts.Interval):
		}
	}
}

// Update recomputes every gauge once.
func (c *Controller) Update(ctx context.Context) error {
	var pools v1.NodePoolList
	if err := c.opts.Client.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	pods, err := c.pods(ctx)
	if err != nil {
		return err
	}
	// Read only, like the pods: no copy of every node and pod.
	nodes := c.opts.Cluster.ReadOnlyNodes()
	c.updateNodes(nodes)
	c.updatePods(pods, nodes)
	if c.opts.Decisions != nil {
		c.opts.Decisions.PublishDecisions(pods, c.opts.Clock.Now())
	}
	c.updateNodePools(pools.Items)
	types, err := c.updateInstanceTypes(ctx, pools.Items)
	updateCost(pools.Items, nodes, types)
	return err
}

// pods lists every pod. They are only read: the cache's own objects, from
// Options.Pods without any copy, else from the client without a deep copy.
func (c *Controller) pods(ctx context.Context) ([]*corev1.Pod, error) {
	if c.opts.Pods != nil {
		return c.opts.Pods.All(ctx)
	}
	var list corev1.PodList
	if err := c.opts.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// offeringKey names one offering: instance type, capacity type, zone.
type offeringKey struct{ it, ct, zone string }

// updateCost sums, per NodePool, the hourly price of its launched nodes'
// offerings (karpenter_nodepools_cost_total), each at its list price in
// its own NodePool's instance types (scheduling.OfferingPrice): a price
// map shared by every pool let the last pool's price win. A node whose offering has no price any more counts as a cost
// tracker error and adds nothing.
func updateCost(pools []v1.NodePool, nodes []*state.StateNode, types map[string][]*scheduling.InstanceType) {
	cost := make(map[string]float64, len(pools))
	for i := range pools {
		cost[pools[i].Name] = 0
	}
	for _, sn := range nodes {
		if sn.NodeClaim == nil {
			continue
		}
		l := sn.NodeClaim.Labels
		if sn.Node != nil {
			l = sn.Node.Labels
		}
		pool, it := l[v1.LabelNodePool], l[corev1.LabelInstanceTypeStable]
		if _, ok := cost[pool]; !ok || it == "" {
			continue // not launched yet, or its NodePool is gone
		}
		price, ok := scheduling.OfferingPrice(types[pool], it, l[corev1.LabelTopologyZone], l[v1.LabelCapacityType])
		if !ok {
			metrics.NodePoolsCostTrackerErrors.WithLabelValues(pool).Inc()
			continue
		}
		cost[pool] += price
	}
	metrics.NodePoolsCost.Reset()
	for pool, c := range cost {
		metrics.NodePoolsCost.WithLabelValues(pool).Set(c)
	}
}

// nodeLabelValues are the NodeLabels values of node for one resource.
func nodeLabelValues(node *corev1.Node, resourceName corev1.ResourceName) []string {
	l := node.Labels
	return []string{node.Name, l[v1.LabelNodePool], resourceLabel(resourceName), string(node.Status.Phase),
		l[corev1.LabelArchStable], l[v1.LabelCapacityType], l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone],
		l[corev1.LabelOSStable], l[corev1.LabelTopologyRegion]}
}

// resourceLabel spells a resource as Karpenter's resource_type label does
// (lower case, '/' and '.' and '-' as '_').
func resourceLabel(name corev1.ResourceName) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(strings.ToLower(string(name)))
}

// updateNodes sets the per-node gauges: about ten series of ten labels
// per node, kept as metrics.Series (one string each) rather than gauge
// vectors.
func (c *Controller) updateNodes(nodes []*state.StateNode) {
	now := c.opts.Clock.Now()
	totalRequests, totalAllocatable := corev1.ResourceList{}, corev1.ResourceList{}
	for _, sn := range nodes {
		node := sn.Node
		if node == nil {
			continue
		}
		c.nodesLifetime.Set(now.Sub(node.CreationTimestamp.Time).Seconds(), node.Name, node.Labels[v1.LabelNodePool])
		var podReq, podLim, dsReq, dsLim corev1.ResourceList
		for _, p := range sn.Pods {
			req, lim := pods.Requests(p), pods.Limits(p)
			podReq, podLim = add(podReq, req), add(podLim, lim)
			if pods.IsOwnedByDaemonSet(p) {
				dsReq, dsLim = add(dsReq, req), add(dsLim, lim)
			}
		}
		overhead := corev1.ResourceList{}
		for name, capacity := range node.Status.Capacity {
			o := capacity.DeepCopy()
			if a, ok := node.Status.Allocatable[name]; ok {
				o.Sub(a)
			}
			overhead[name] = o
		}
		for i, list := range []corev1.ResourceList{node.Status.Allocatable, overhead, podReq, podLim, dsReq, dsLim} {
			for name, q := range list {
				c.nodeResources[i].Set(q.AsApproximateFloat64(), nodeLabelValues(node, name)...)
			}
		}
		totalRequests = add(totalRequests, podReq)
		totalAllocatable = add(totalAllocatable, node.Status.Allocatable)
	}
	c.nodesLifetime.Flush()
	for _, s := range c.nodeResources {
		s.Flush()
	}
	metrics.ClusterUtilization.Reset()
	for name, alloc := range totalAllocatable {
		if alloc.IsZero() {
			continue
		}
		req := totalRequests[name]
		metrics.ClusterUtilization.WithLabelValues(resourceLabel(name)).Set(100 * req.AsApproximateFloat64() / alloc.AsApproximateFloat64())
	}
}

func (c *Controller) updatePods(pods []*corev1.Pod, nodes []*state.StateNode) {
	byName := map[string]*corev1.Node{}
	for _, sn := range nodes {
		if sn.Node != nil {
			byName[sn.Node.Name] = sn.Node
		}
	}
	now := c.opts.Clock.Now()
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
		if waiting := now.Sub(p.CreationTimestamp.Time).Seconds(); p.DeletionTimestamp == nil {
			switch {
			case p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending:
				c.podsUnbound.Set(waiting, p.Name, p.Namespace)
			case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending:
				c.podsUnstarted.Set(waiting, p.Name, p.Namespace)
			}
		}
		var nl map[string]string
		if n := byName[p.Spec.NodeName]; n != nil {
			nl = n.Labels
		}
		c.podsState.Set(1, p.Name, p.Namespace, owner(p), p.Spec.NodeName, nl[v1.LabelNodePool], nl[corev1.LabelTopologyZone],
			nl[corev1.LabelArchStable], nl[v1.LabelCapacityType], nl[corev1.LabelInstanceTypeStable], string(p.Status.Phase))
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			since := cond.LastTransitionTime.Sub(p.CreationTimestamp.Time).Seconds()
			switch {
			case cond.Type == corev1.PodScheduled && !c.bound[p.UID]:
				c.bound[p.UID] = true
				metrics.PodsBoundDuration.Observe(since)
			case cond.Type == corev1.PodReady && !c.started[p.UID]:
				c.started[p.UID] = true
				metrics.PodsStartupDuration.Observe(since)
			}
		}
	}
	c.podsState.Flush()
	c.podsUnbound.Flush()
	c.podsUnstarted.Flush()
	for _, seen := range []map[types.UID]bool{c.started, c.bound} {
		for uid := range seen {
			if !live[uid] {
				delete(seen, uid)
			}
		}
	}
}

// owner is Karpenter's owner label: the API path of the pod's controller.
func owner(p *corev1.Pod) string {
	o := pods.ControllerOf(p)
	if o == nil {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/%ss/%s", o.APIVersion, p.Namespace, strings.ToLower(o.Kind), o.Name)
}

func (c *Controller) updateNodePools(pools []v1.NodePool) {
	metrics.NodePoolsUsage.Reset()
	metrics.NodePoolsLimit.Reset()
	usage := c.opts.Cluster.NodePoolUsage()
	for i := range pools {
		np := &pools[i]
		for name, q := range usage[np.Name] {
			metrics.NodePoolsUsage.WithLabelValues(np.Name, resourceLabel(name)).Set(q.AsApproximateFloat64())
		}
		for name, q := range np.Spec.Limits {
			metrics.NodePoolsLimit.WithLabelValues(np.Name, resourceLabel(name)).Set(q.AsApproximateFloat64())
		}
	}
}

// updateInstanceTypes publishes the NodePools' instance types and their
// offerings, and returns each NodePool's instance types.
func (c *Controller) updateInstanceTypes(ctx context.Context, pools []v1.NodePool) (map[string][]*scheduling.InstanceType, error) {
	cpu, mem := map[string]float64{}, map[string]float64{}
	available, price := map[offeringKey]bool{}, map[offeringKey]float64{}
	byPool := make(map[string][]*scheduling.InstanceType, len(pools))
	var errs []error
	for i := range pools {
		its, err := c.opts.InstanceTypes.GetInstanceTypes(ctx, &pools[i])
		if cloudprovider.IsNodeClassNotReadyError(err) || errors.Is(err, overlay.ErrNotEvaluated) {
			// Not a fault of this controller: the NodePool's Ready
			// condition and the node class's status say it, and the
			// NodeOverlays are evaluated within a second of start-up; an
			// ERROR every interval would only repeat them.
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instance types of nodepool %s: %w", pools[i].Name, err))
			continue
		}
		byPool[pools[i].Name] = its
		for _, it := range its {
			cpu[it.Name] = it.Capacity.Cpu().AsApproximateFloat64()
			mem[it.Name] = it.Capacity.Memory().AsApproximateFloat64()
			for _, o := range it.Offerings {
				k := offeringKey{it.Name, o.CapacityType, o.Zone}
				available[k] = available[k] || o.Available
				price[k] = o.Price
			}
		}
	}
	metrics.InstanceTypeCPUCores.Reset()
	metrics.InstanceTypeMemoryBytes.Reset()
	metrics.InstanceTypeOfferingAvailable.Reset()
	metrics.InstanceTypeOfferingPrice.Reset()
	for name := range cpu {
		metrics.InstanceTypeCPUCores.WithLabelValues(name).Set(cpu[name])
		metrics.InstanceTypeMemoryBytes.WithLabelValues(name).Set(mem[name])
	}
	for k, ok := range available {
		v := 0.0
		if ok {
			v = 1
		}
		metrics.InstanceTypeOfferingAvailable.WithLabelValues(k.it, k.ct, k.zone).Set(v)
		metrics.InstanceTypeOfferingPrice.WithLabelValues(k.it, k.ct, k.zone).Set(price[k])
	}
	return byPool, errors.Join(errs...)
}

func add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}
