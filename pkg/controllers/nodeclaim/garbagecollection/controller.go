package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Defaults of Options.
const (
	// DefaultInterval is how often the cloud and the cluster are compared.
	DefaultInterval = 2 * time.Minute
	// DefaultGracePeriod is how long after launch an instance without a
	// NodeClaim is left alone: the launch controller records the provider
	// ID in the NodeClaim's status only after Create returns.
	DefaultGracePeriod = 30 * time.Second
)

// Event reasons of this controller.
const (
	// ReasonOrphanInstanceTerminated: an instance of this cluster had no
	// NodeClaim and was terminated.
	ReasonOrphanInstanceTerminated = "OrphanInstanceTerminated"
	// ReasonInstanceGone: a NodeClaim's instance no longer exists, so the
	// NodeClaim was deleted.
	ReasonInstanceGone = "InstanceGone"
	// ReasonInstanceNotOwned: a NodeClaim's instance exists but lacks this
	// cluster's identity, so the NodeClaim was left alone.
	ReasonInstanceNotOwned = "InstanceNotOwned"
)

// Name is the controller's name (logs, metrics, the manager's registry).
const Name = "nodeclaim.garbagecollection"

// Options configure the controller.
type Options struct {
	// Client reads NodeClaims and Nodes and deletes them.
	Client client.Client
	// CloudProvider lists and terminates this cluster's instances.
	CloudProvider cloudprovider.CloudProvider
	// Recorder publishes events.
	Recorder events.Recorder
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
	// Interval defaults to DefaultInterval.
	Interval time.Duration
	// GracePeriod defaults to DefaultGracePeriod.
	GracePeriod time.Duration
	// APIReader reads past the cache (the manager's GetAPIReader): an
	// instance is terminated as an orphan only once the API server confirms
	// that the NodeClaim its tag names does not hold it. Required, so the
	// operator cannot leave garbage collection trusting its cache.
	APIReader client.Reader
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("CloudProvider is required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if o.APIReader == nil {
		errs = append(errs, errors.New("APIReader is required: an orphan is confirmed past the cache before its instance is terminated"))
	}
	if o.Interval < 0 || o.GracePeriod < 0 {
		errs = append(errs, errors.New("Interval and GracePeriod must not be negative"))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.GracePeriod == 0 {
		o.GracePeriod = DefaultGracePeriod
	}
	return errors.Join(errs...)
}

// Controller is the garbage collector.
type Controller struct {
	opts Options
	// nodeClasses are the node class kinds the cloud provider serves; other
	// NodeClaims' instances are not this provider's to judge.
	nodeClasses cloudprovider.NodeClassKinds
}

// NewController validates opts and returns the controller.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("nodeclaim garbage collection options: %w", err)
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("nodeclaim garbage collection: %w", err)
	}
	return &Controller{opts: opts, nodeClasses: kinds}, nil
}

// Register adds the controller to mgr: a singleton reconcile, triggered
// once at start and then every Interval, run by the leader only.
func (c *Controller) Register(mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(Name).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: Name}})
			return nil
		})).
		Complete(c)
	if err != nil {
		return fmt.Errorf("registering %s: %w", Name, err)
	}
	return nil
}

// Reconcile runs one collection pass and asks to run again after Interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, "nodeclaim.garbagecollection")
	if err := c.Collect(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// Collect runs one pass: orphan instances first, then NodeClaims whose
// instance is gone. Errors of single objects do not stop the pass; they are
// returned together at the end.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.opts.CloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	// Read only (a Delete does not change its object): the cache's
	// NodeClaims, not a deep copy of every one each pass.
	nodeClaims := &v1.NodeClaimList{}
	if err := c.opts.Client.List(ctx, nodeClaims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	claimed := map[string]bool{}
	// A NodeClaim whose launch has not been recorded yet (Create returned,
	// the status patch is pending, or the controller restarted in between)
	// claims the instance tagged with its UID: Create returns that instance
	// again instead of launching another.
	launching := map[types.UID]bool{}
	for i := range nodeClaims.Items {
		nc := &nodeClaims.Items[i]
		if pid := nc.Status.ProviderID; pid != "" {
			claimed[pid] = true
		} else if nc.DeletionTimestamp.IsZero() {
			launching[nc.UID] = true
		}
	}
	live := map[string]bool{}
	var errs []error
	for _, inst := range instances {
		pid := inst.Status.ProviderID
		live[pid] = true
		if claimed[pid] || (inst.UID != "" && launching[inst.UID]) || c.opts.Clock.Since(inst.CreationTimestamp.Time) < c.opts.GracePeriod {
			continue
		}
		if held, err := c.heldPastCache(ctx, inst); held || err != nil {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := c.terminateOrphan(ctx, inst); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range nodeClaims.Items {
		nc := &nodeClaims.Items[i]
		pid := nc.Status.ProviderID
		if pid == "" || live[pid] || !nc.DeletionTimestamp.IsZero() || !c.nodeClasses.Manages(nc.Spec.NodeClassRef) {
			continue
		}
		if err := c.deleteNodeClaimOfGoneInstance(ctx, nc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// heldPastCache reports whether the NodeClaim named by inst's tag, read
// from the API server, holds inst: by its provider ID, or, not launched
// yet, by its UID. The cache can lag the API server by many seconds under
// load (12 s in a 500-node burst on the test machine), so an instance
// launched for a NodeClaim this process's cache does not show yet (one a
// process with a fresher cache launched) is not an orphan. In an
// experiment whose lifecycle launched ahead of the cache, 221 instances
// were terminated as orphans in one burst (5 s grace period) before this
// check. Any doubt (a failed read) leaves the instance alone.
func (c *Controller) heldPastCache(ctx context.Context, inst *v1.NodeClaim) (bool, error) {
	if inst.Name == "" {
		return false, nil
	}
	nc := &v1.NodeClaim{}
	err := c.opts.APIReader.Get(ctx, types.NamespacedName{Name: inst.Name}, nc)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("confirming instance %s has no NodeClaim: %w", inst.Status.ProviderID, err)
	}
	if pid := nc.Status.ProviderID; pid != "" {
		return pid == inst.Status.ProviderID, nil
	}
	return nc.DeletionTimestamp.IsZero() && inst.UID != "" && nc.UID == inst.UID, nil
}

// terminateOrphan terminates an instance no NodeClaim points at and deletes
// its Node if one registered. The Node is looked up before the instance is
// terminated: the cloud's node lifecycle (the simulated cloud's machines,
// the cloud controller manager on AWS) may delete it as soon as the
// instance is gone, and the event must still find the Node it is about.
func (c *Controller) terminateOrphan(ctx context.Context, inst *v1.NodeClaim) error {
	pid := inst.Status.ProviderID
	logger := log.FromContext(ctx).WithValues(logging.ProviderID, pid, logging.NodeClaim, klog.KObj(inst), logging.NodePool, klog.KRef("", inst.Labels[v1.LabelNodePool]))
	node, err := c.nodeFor(ctx, pid)
	if err != nil {
		return err
	}
	if err := c.opts.CloudProvider.Delete(ctx, inst); cloudprovider.IgnoreNodeClaimNotFoundError(err) != nil {
		return fmt.Errorf("terminating orphan instance %s: %w", pid, err)
	}
	age := c.opts.Clock.Since(inst.CreationTimestamp.Time).Round(time.Second)
	logger.Info("terminated orphan instance", logging.Age, age.String())
	msg := fmt.Sprintf("Terminated instance %s: it belongs to this cluster but no NodeClaim references it (launched %s ago; nodeclaim tag %q)", pid, age, inst.Name)
	if node != nil {
		c.opts.Recorder.Publish(events.Warning(node, ReasonOrphanInstanceTerminated, "GarbageCollect", "%s", msg))
		if err := c.opts.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting node %s of orphan instance %s: %w", node.Name, pid, err)
		}
		logger.Info("deleted node of orphan instance", logging.Node, klog.KObj(node))
		return nil
	}
	if np := inst.Labels[v1.LabelNodePool]; np != "" {
		pool := &v1.NodePool{}
		if err := c.opts.Client.Get(ctx, types.NamespacedName{Name: np}, pool); err == nil {
			c.opts.Recorder.Publish(events.Warning(pool, ReasonOrphanInstanceTerminated, "GarbageCollect", "%s", msg))
		}
	}
	return nil
}

// nodeFor returns the Node registered with providerID, or nil.
func (c *Controller) nodeFor(ctx context.Context, pid string) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.opts.Client.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == pid {
			return &nodes.Items[i], nil
		}
	}
	return nil, nil
}

// deleteNodeClaimOfGoneInstance deletes nc once Get confirms its instance
// is gone (List may predate a launch that finished since). An instance that
// exists without this cluster's identity is not gone: nc stays.
func (c *Controller) deleteNodeClaimOfGoneInstance(ctx context.Context, nc *v1.NodeClaim) error {
	pid := nc.Status.ProviderID
	_, err := c.opts.CloudProvider.Get(ctx, pid)
	if cloudprovider.IsNodeClaimNotOwned(err) {
		// The instance runs but is not provably ours (launched by Karpenter
		// before a migration, or the cluster was restored under a new
		// kube-system UID): deleting the NodeClaim would drain the node and
		// leave the instance running unmanaged.
		log.FromContext(ctx).Info("left nodeclaim alone: its instance exists but is not this cluster's", logging.NodeClaim, klog.KObj(nc), logging.ProviderID, pid, logging.Error, err.Error())
		c.opts.Recorder.Publish(events.Warning(nc, ReasonInstanceNotOwned, "GarbageCollect",
			"Left NodeClaim in place: its instance %s exists but is not this cluster's (%v). To adopt it, tag the instance with those tags; otherwise delete this NodeClaim and the instance by hand", pid, err))
		return nil
	}
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		if err != nil {
			return fmt.Errorf("getting instance %s of nodeclaim %s: %w", pid, nc.Name, err)
		}
		return nil
	}
	if err := c.opts.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim %s whose instance %s is gone: %w", nc.Name, pid, err)
	}
	log.FromContext(ctx).Info("deleted nodeclaim whose instance is gone", logging.NodeClaim, klog.KObj(nc), logging.ProviderID, pid)
	c.opts.Recorder.Publish(events.Warning(nc, ReasonInstanceGone, "GarbageCollect",
		"Deleted NodeClaim: its instance %s no longer exists in the cloud (terminated outside joiner?); the provisioner replaces its capacity if pods need it", pid))
	return nil
}
