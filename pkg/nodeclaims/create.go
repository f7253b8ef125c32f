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
	"k8s.io/apimachinery/pkg/types"
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
	// NodeClaimNameRetired reports whether a NodeClaim of this name was
	// seen being deleted or gone: a new NodeClaim never takes such a
	// name.
	NodeClaimNameRetired(name string) bool
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
	// Replaces are the UIDs of the NodeClaims a disruption command
	// launches this one to replace; when set, the name derives from them
	// and the pods (ReplacementName) rather than from the pods and
	// Failures.
	Replaces []types.UID
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
// planned ones, but named after the candidates (replaces, their NodeClaims'
// UIDs; see ReplacementName); reason labels
// karpenter_nodeclaims_created_total (e.g. "underutilized"). As for a
// provisioning plan, the solver already kept limits (the command's
// simulation removed the candidates whose capacity the replacements take
// over) and the instance-type cap. A caller that replaces nothing (a
// static NodePool's scale-up) passes no UIDs. created[i] is nil where
// creating planned[i] failed.
func (c *Creator) CreateReplacements(ctx context.Context, nodePools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string, replaces []types.UID) ([]*v1.NodeClaim, error) {
	claims := make([]Planned, 0, len(planned))
	var errs []error
	for _, nc := range planned {
		np, ok := nodePools[nc.NodePool]
		if !ok {
			errs = append(errs, fmt.Errorf("replacement names nodepool %q, which may not launch now", nc.NodePool))
			continue
		}
		claims = append(claims, Planned{NodePool: np, Planned: nc, Reason: reason, Replaces: replaces})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c.Create(ctx, claims)
}

// createParallelism bounds the NodeClaim creations in flight.
const createParallelism = 50

// maxNameAttempts bounds how many names create offers the API server for
// one planned node (names the cluster state knows retired are skipped
// without asking, and do not count).
const maxNameAttempts = 5

// name is the attempt-th name of pc's deterministic sequence.
func (pc *Planned) name(attempt int) string {
	if len(pc.Replaces) > 0 {
		return ReplacementName(pc.NodePool.Name, pc.Replaces, pc.Planned.Pods, attempt)
	}
	return RelaunchName(pc.NodePool.Name, pc.Failures, pc.Planned.Pods, attempt)
}

// create creates one NodeClaim under the first name of its deterministic
// sequence that no NodeClaim had before it. The names are deterministic so
// that the same plan computed again (a retried batch, a second replica, a
// restart between create and the informer's sync, a disruption command
// decided again after a restart) offers the API server the same name and
// finds its own claim instead of launching a second node: AlreadyExists is
// success when the existing NodeClaim is still on its way (same NodePool,
// not deleting, not yet registered). A name the cluster state saw retired
// (its NodeClaim deleted, or being deleted) is skipped before it is
// offered: a new NodeClaim under an old name would read as the old one
// come back, to a user and to a client that waits for the name to be gone
// (upstream's drift spec did), and the API server cannot tell, since the
// old one is gone. An existing claim that is being deleted, or one whose
// node already joined and still did not take these pods (filled by others,
// or unfit), moves create to the next name too: it must not absorb them
// again, or they would stay pending forever.
func (c *Creator) create(ctx context.Context, pc Planned) (*v1.NodeClaim, error) {
	logger := log.FromContext(ctx)
	// The loop ends: each attempt's name differs, the retired names are
	// finite, and every name offered and refused counts.
	for attempt, refused := 0, 0; refused < maxNameAttempts; attempt++ {
		nc := NewNodeClaim(pc.NodePool, pc.Planned)
		nc.Name = pc.name(attempt)
		if len(pc.Planned.Pods) == 0 {
			// A NodeClaim without pods (a static NodePool's) has nothing to
			// derive a name from: each one is a new node.
			nc.Name, nc.GenerateName = "", pc.NodePool.Name+"-"
		} else if c.opts.State.NodeClaimNameRetired(nc.Name) {
			continue
		}
		if pc.Mutate != nil {
			pc.Mutate(nc)
		}
		if nc.Name != "" {
			if later, err := c.laterClaim(ctx, pc, attempt); err != nil || later != nil {
				return later, err
			}
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
			refused++
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
	return nil, fmt.Errorf("creating nodeclaim for %d pods: %d names are taken by NodeClaims being deleted or already registered", len(pc.Planned.Pods), maxNameAttempts)
}

// laterClaim returns the claim of a later name of pc's sequence (after
// attempt) that is still the launch pc wants, or nil. The retired names a
// creator skips are its own process's memory: one that skipped a name and
// created the next, and then restarted (or lost its leadership), would
// offer the skipped name again, find it free and launch the same plan
// twice. So before a name is offered, the later ones are looked up, in the
// cache (a Get per name, no API call).
func (c *Creator) laterClaim(ctx context.Context, pc Planned, attempt int) (*v1.NodeClaim, error) {
	for later := attempt + 1; later <= attempt+maxNameAttempts; later++ {
		existing := &v1.NodeClaim{}
		err := c.opts.Client.Get(ctx, client.ObjectKey{Name: pc.name(later)}, existing)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up nodeclaim %s: %w", pc.name(later), err)
		}
		if sameIntent(existing, pc.NodePool.Name) {
			log.FromContext(ctx).V(1).Info("nodeclaim already exists under a later name", logging.NodeClaim, klog.KObj(existing))
			c.opts.State.NodeClaimCreated(existing)
			return existing, nil
		}
	}
	return nil, nil
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
