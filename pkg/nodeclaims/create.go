package nodeclaims

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// ClusterState is the part of pkg/state's Cluster a Creator writes to.
type ClusterState interface {
	// NodeClaimCreated records a NodeClaim just created, so the next
	// snapshot counts it (and the pods nominated to it) even before the
	// informer delivers it.
	NodeClaimCreated(nc *v1.NodeClaim)
}

// Options configure a Creator.
type Options struct {
	// Client writes NodeClaims to the API server.
	Client client.Client
	State  ClusterState
}

// Creator creates the NodeClaims a plan asks for, the same way for a
// provisioning pass and for a disruption command's replacements:
// NewNodeClaim, deterministic names, the in-flight memory, the created
// metric.
type Creator struct {
	opts Options
}

// NewCreator validates opts and returns a Creator.
func NewCreator(opts Options) (*Creator, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if opts.State == nil {
		errs = append(errs, errors.New("cluster state is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("nodeclaim creator options: %w", err)
	}
	return &Creator{opts: opts}, nil
}

// Planned is a NodeClaim a plan asked for, with its NodePool.
type Planned struct {
	NodePool *v1.NodePool
	Planned  *scheduling.NewNodeClaim
	// Reason labels the created NodeClaim in karpenter_nodeclaims_created_total
	// ("" is "provisioning"; disruption's replacements carry theirs).
	Reason string
	// Failures is the NodePool's launch failure count, part of the name.
	Failures int64
	// Mutate, when set, changes the NodeClaim before it is created (a
	// ProvisioningRequest's labels and annotations).
	Mutate func(*v1.NodeClaim)
}

// Create creates the planned NodeClaims in parallel; created[i] is nil
// where creating claims[i] failed.
func (c *Creator) Create(ctx context.Context, claims []Planned) ([]*v1.NodeClaim, error) {
	created := make([]*v1.NodeClaim, len(claims))
	errs := make([]error, len(claims))
	workqueue.ParallelizeUntil(ctx, createParallelism, len(claims), func(i int) {
		created[i], errs[i] = c.create(ctx, claims[i])
	})
	return created, errors.Join(errs...)
}

// CreateReplacements creates the NodeClaims a disruption command launches
// before it deletes its candidates, exactly as a provisioning pass creates
// planned ones; reason labels karpenter_nodeclaims_created_total (e.g.
// "underutilized"). As for a provisioning plan, the solver already kept
// limits (the command's simulation removed the candidates whose capacity
// the replacements take over) and the instance-type cap. created[i] is nil
// where creating planned[i] failed.
func (c *Creator) CreateReplacements(ctx context.Context, nodePools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string) ([]*v1.NodeClaim, error) {
	claims := make([]Planned, 0, len(planned))
	var errs []error
	for _, nc := range planned {
		np, ok := nodePools[nc.NodePool]
		if !ok {
			errs = append(errs, fmt.Errorf("replacement names nodepool %q, which may not launch now", nc.NodePool))
			continue
		}
		claims = append(claims, Planned{NodePool: np, Planned: nc, Reason: reason})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c.Create(ctx, claims)
}

// createParallelism bounds the NodeClaim creations in flight.
const createParallelism = 50

// maxNameAttempts bounds how many names create tries for one planned node.
const maxNameAttempts = 5

// create creates one NodeClaim. AlreadyExists is success when the existing
// NodeClaim is still on its way (same NodePool, not deleting, not yet
// registered): the name is derived from the pods, so it is the one this
// pass wanted, created by an earlier pass or another replica. Otherwise the
// next name in the same deterministic sequence is tried: an existing claim
// that is being deleted, or one whose node already joined and still did not
// take these pods (filled by others, or unfit), must not absorb them again,
// or they would stay pending forever.
func (c *Creator) create(ctx context.Context, pc Planned) (*v1.NodeClaim, error) {
	logger := log.FromContext(ctx)
	for attempt := range maxNameAttempts {
		nc := NewNodeClaim(pc.NodePool, pc.Planned)
		nc.Name = RelaunchName(pc.NodePool.Name, pc.Failures, pc.Planned.Pods, attempt)
		if len(pc.Planned.Pods) == 0 {
			// A NodeClaim without pods (a static NodePool's) has nothing to
			// derive a name from: each one is a new node.
			nc.Name, nc.GenerateName = "", pc.NodePool.Name+"-"
		}
		if pc.Mutate != nil {
			pc.Mutate(nc)
		}
		err := c.opts.Client.Create(ctx, nc)
		if apierrors.IsAlreadyExists(err) {
			existing := &v1.NodeClaim{}
			if err := c.opts.Client.Get(ctx, client.ObjectKeyFromObject(nc), existing); err != nil {
				return nil, fmt.Errorf("getting existing nodeclaim %s: %w", nc.Name, err)
			}
			if sameIntent(existing, pc.NodePool.Name) {
				logger.V(1).Info("nodeclaim already exists", logging.NodeClaim, klog.KObj(nc))
				c.opts.State.NodeClaimCreated(existing)
				return existing, nil
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("creating nodeclaim %s: %w", nc.Name, err)
		}
		c.opts.State.NodeClaimCreated(nc)
		reason := pc.Reason
		if reason == "" {
			reason = "provisioning"
		}
		metrics.NodeClaimsCreated.WithLabelValues(reason, pc.NodePool.Name, strconv.FormatBool(pc.Planned.MinValuesRelaxed)).Inc()
		logger.Info("created nodeclaim", logging.NodeClaim, klog.KObj(nc), logging.NodePool, klog.KObj(pc.NodePool), logging.Reason, reason,
			logging.Pods, len(pc.Planned.Pods), logging.InstanceTypes, summarizeInstanceTypes(pc.Planned.InstanceTypes), logging.Requests, formatResources(pc.Planned.Requests))
		return nc, nil
	}
	return nil, fmt.Errorf("creating nodeclaim for %d pods: the first %d names are taken by NodeClaims being deleted or already registered", len(pc.Planned.Pods), maxNameAttempts)
}

// sameIntent reports whether an existing NodeClaim of the planned name is
// the launch this pass wants, rather than an older one that could not help.
func sameIntent(existing *v1.NodeClaim, nodePool string) bool {
	return existing.DeletionTimestamp == nil &&
		existing.Labels[v1.LabelNodePool] == nodePool &&
		!existing.StatusConditions().IsTrue(v1.ConditionTypeRegistered)
}

// summarizeInstanceTypes names the first few options and how many more.
func summarizeInstanceTypes(its []*scheduling.InstanceType) string {
	const shown = 5
	names := make([]string, 0, shown)
	for i, it := range its {
		if i == shown {
			break
		}
		names = append(names, it.Name)
	}
	s := strings.Join(names, ", ")
	if len(its) > shown {
		s += fmt.Sprintf(" and %d other(s)", len(its)-shown)
	}
	return s
}

// formatResources renders a resource list compactly, in name order.
func formatResources(rl corev1.ResourceList) string {
	parts := make([]string, 0, len(rl))
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}
