package disruption

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// Defaults for Options (Karpenter's values where it has one).
const (
	DefaultPollInterval       = 10 * time.Second
	DefaultValidationPeriod   = 15 * time.Second
	DefaultReplacementTimeout = 10 * time.Minute
	DefaultDriftHaltDuration  = time.Hour
	// queueTick is how often in-flight commands are checked: replacement
	// initialisation raises no event the queue could wait on cheaply.
	queueTick = time.Second
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch;update
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// ClusterState is the part of pkg/state the controller uses.
type ClusterState interface {
	// Synced reports whether the state has seen every Node and NodeClaim;
	// disrupting on a partial picture could remove needed capacity.
	Synced(ctx context.Context) bool
	// ReadOnlyNodes are the tracked nodes with their pods, not copied: the
	// engine only reads them, and writes go through fresh reads (a copy
	// of every node and bound pod per poll was the largest share of
	// joiner's heap at 10,000 pods).
	ReadOnlyNodes() []*state.StateNode
	// Generation changes whenever the state does: an unchanged cluster
	// need not be decided on again.
	Generation() uint64
	// MarkForDeletion keeps the provisioner from planning pods onto the
	// candidates of a command in flight; UnmarkForDeletion undoes it.
	MarkForDeletion(providerIDs ...string)
	UnmarkForDeletion(providerIDs ...string)
}

// Model builds the snapshot of the live cluster consolidation simulates
// on (livemodel.Builder): the same picture the provisioner plans on, so a
// consolidation never relies on capacity the provisioner would not find.
type Model interface {
	Build(ctx context.Context) (*livemodel.Snapshot, error)
}

// NodeClaimCreator creates a command's replacements the way a
// provisioning pass creates planned NodeClaims (nodeclaims.Creator), named
// after the candidates' NodeClaims (replaces, their UIDs).
type NodeClaimCreator interface {
	CreateReplacements(ctx context.Context, nodePools map[string]*v1.NodePool, planned []*scheduling.NewNodeClaim, reason string, replaces []types.UID) ([]*v1.NodeClaim, error)
}

// Options configure the controller.
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server itself (the manager's
	// GetAPIReader; required). The queue asks it before it believes
	// the cache that a replacement is gone: under load the cache can lag
	// the API server by longer than any grace.
	APIReader client.Reader
	// CloudProvider names the node class kinds joiner serves: NodeClaims
	// of other kinds (Karpenter's own, during a migration) are never
	// disrupted.
	CloudProvider cloudprovider.CloudProvider
	State         ClusterState
	Model         Model
	NodeClaims    NodeClaimCreator
	Recorder      events.Recorder
	// Clock paces the loop, the validation wait and the queue's timeouts.
	Clock clock.Clock

	// SpotToSpot is the SpotToSpotConsolidation feature gate.
	SpotToSpot bool
	// MinSavingsFraction is the least share of the candidates' price a
	// replacement must save (0: the engine's default, 5%).
	MinSavingsFraction float64
	// Scheduling are the solver settings consolidation simulates with
	// (PREFERENCE_POLICY, MIN_VALUES_POLICY).
	Scheduling scheduling.Options
	// Scoring is kube-scheduler's resource scoring by scheduler name
	// (SCHEDULER_CONFIG), with which the engine replays where
	// kube-scheduler puts the pods a command evicts.
	Scoring map[string]schedulerconfig.Scoring

	// PollInterval is the time between two decisions (default 10 s).
	PollInterval time.Duration
	// ValidationPeriod is how long emptiness and consolidation commands
	// wait before they are re-checked and carried out (default 15 s).
	ValidationPeriod time.Duration
	// ReplacementTimeout bounds how long a command waits for its
	// replacements to initialise before it is rolled back (default 10 min).
	ReplacementTimeout time.Duration
	// DriftHaltDuration is how long drift stays halted for a NodePool whose
	// replacements failed to initialise, unless the NodePool changes first
	// (default 1 h).
	DriftHaltDuration time.Duration
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.State == nil {
		errs = append(errs, errors.New("cluster state is required"))
	}
	if o.CloudProvider == nil {
		errs = append(errs, errors.New("cloud provider is required"))
	}
	if o.Model == nil {
		errs = append(errs, errors.New("live model is required"))
	}
	if o.NodeClaims == nil {
		errs = append(errs, errors.New("nodeclaim creator is required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("event recorder is required"))
	}
	if o.PollInterval < 0 || o.ValidationPeriod < 0 || o.ReplacementTimeout < 0 || o.DriftHaltDuration < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.APIReader == nil {
		// Falling back to Client would make the cache the judge of a
		// replacement's deletion again (conformance run P16).
		errs = append(errs, errors.New("API reader is required (the manager's uncached reader: the queue asks it before rolling a command back on a replacement the cache does not show)"))
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ValidationPeriod == 0 {
		o.ValidationPeriod = DefaultValidationPeriod
	}
	if o.ReplacementTimeout == 0 {
		o.ReplacementTimeout = DefaultReplacementTimeout
	}
	if o.DriftHaltDuration == 0 {
		o.DriftHaltDuration = DefaultDriftHaltDuration
	}
	return errors.Join(errs...)
}

// Controller decides and starts disruption commands; its Queue finishes
// them. Both are leader-elected runnables.
type Controller struct {
	opts        Options
	queue       *Queue
	nodeClasses cloudprovider.NodeClassKinds

	// memo remembers the last decision that found nothing to do, so an
	// unchanged cluster is not simulated again every pass (Karpenter's
	// consolidated-state memo).
	memo struct {
		key string
		at  time.Time
	}
	// blocked is, per NodePool and reason whose budget blocked the last
	// decision, the picture of the pool's nodes last logged.
	blocked map[string]string

	// decide and validate are the engine (swapped only by this package's
	// tests, to drive the executor with a chosen command).
	decide   func(*disruption.Input) (*disruption.Decision, error)
	validate func(*disruption.Command, *disruption.Input) error
}

// NewController validates opts and builds the controller and its queue.
func NewController(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("disruption options: %w", err)
	}
	kinds, err := cloudprovider.SupportedNodeClassKinds(opts.CloudProvider, opts.Client.Scheme())
	if err != nil {
		return nil, fmt.Errorf("disruption: %w", err)
	}
	c := &Controller{opts: opts, nodeClasses: kinds, decide: disruption.Decide, validate: disruption.Validate}
	c.queue = newQueue(&c.opts)
	return c, nil
}

// Register adds the decision loop and the queue to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("adding disruption controller: %w", err)
	}
	if err := mgr.Add(c.queue); err != nil {
		return fmt.Errorf("adding disruption queue: %w", err)
	}
	return nil
}

// Queue returns the controller's queue of commands in flight.
func (c *Controller) Queue() *Queue { return c.queue }

// Start runs a decision every PollInterval until ctx ends, and the next one
// at once after a pass that started a command, as Karpenter's disruption
// controller requeues immediately after a command: drifting a NodePool of
// 300 nodes (one node per drift command) starts their replacements back to
// back, not one every PollInterval (50 minutes). It implements
// manager.Runnable; the manager runs it only on the elected leader.
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("disruption")
	ctx = log.IntoContext(ctx, logger)
	c.run(ctx, c.Disrupt)
	return nil
}

// run calls pass until ctx ends: after PollInterval, or at once when the
// previous pass started a command.
func (c *Controller) run(ctx context.Context, pass func(context.Context) (*disruption.Command, error)) {
	started := false
	for {
		if !started {
			select {
			case <-ctx.Done():
				return
			case <-c.opts.Clock.After(c.opts.PollInterval):
			}
		} else if ctx.Err() != nil {
			return
		}
		cmd, err := pass(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "disruption pass failed")
		}
		started = err == nil && cmd != nil
	}
}

// Disrupt runs one pass: clean up what an interrupted earlier command
// left, decide, validate after ValidationPeriod (emptiness and
// consolidation), and start the command. It returns the command started,
// or nil.
func (c *Controller) Disrupt(ctx context.Context) (*disruption.Command, error) {
	logger := log.FromContext(ctx)
	if !c.opts.State.Synced(ctx) {
		logger.V(1).Info("waiting for cluster state to sync before disrupting")
		return nil, nil
	}
	if err := c.cleanUp(ctx); err != nil {
		return nil, err
	}
	generation := c.opts.State.Generation()
	in, err := c.buildInput(ctx)
	if err != nil {
		return nil, err
	}
	key := memoKey(generation, in, c.queue.Len())
	if key == c.memo.key && c.opts.Clock.Since(c.memo.at) < memoTTL {
		return nil, nil
	}
	start := c.opts.Clock.Now()
	dec, err := c.decideWithin(in)
	method, ctype := "none", ""
	if err == nil && dec.Command != nil {
		method, ctype = metricReason(dec.Command.Reason), consolidationType(dec.Command.Method)
	}
	decisionDuration.WithLabelValues(method, ctype).Observe(c.opts.Clock.Since(start).Seconds())
	if err != nil {
		return nil, fmt.Errorf("deciding: %w", err)
	}
	c.report(ctx, in, dec)
	c.storeVerdicts(ctx, in, dec)
	cmd := dec.Command
	if cmd == nil {
		if c.memo.key != key {
			c.memo.key, c.memo.at = key, start
		}
		return nil, nil
	}
	c.memo.key = ""
	logger.Info("disruption command decided", logging.Method, cmd.Method, logging.Reason, cmd.Reason, logging.Decision, decision(cmd),
		logging.Candidates, strings.Join(cmd.Candidates, ","), logging.Replacements, len(cmd.Replacements), logging.SavingsPerHour, cmd.SavingsPerHour, logging.Pods, cmd.PodsMoved)

	if cmd.Method != disruption.MethodDrift && cmd.Method != disruption.MethodStaticDrift {
		// Karpenter waits before an emptiness or consolidation command: a
		// node that just went quiet may be about to take pods again, and
		// the pods' controllers may still be reacting to the last change.
		select {
		case <-ctx.Done():
			return nil, nil
		case <-c.opts.Clock.After(c.opts.ValidationPeriod):
		}
		if !c.opts.State.Synced(ctx) {
			return nil, nil
		}
		fresh, err := c.buildInput(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.validate(cmd, fresh); err != nil {
			failedValidations.With(commandLabels(cmd)).Inc()
			logger.Info("disruption command failed validation", logging.Method, cmd.Method, logging.Candidates, strings.Join(cmd.Candidates, ","), logging.Error, err.Error())
			return nil, nil
		}
		in = fresh
	}
	if err := c.queue.Execute(ctx, cmd, in); err != nil {
		return nil, err
	}
	return cmd, nil
}

// MaxReplacements bounds the replacements one command launches, whatever
// the budgets allow. A command is all or nothing: its candidates stay
// tainted until every replacement initialises, and one replacement that
// fails rolls it back and leaves the others to run empty. Consolidation
// has no pod waiting, so it need not bet that much capacity at once: in
// conformance run P16, under the suite's 100 % budget, one command
// replaced all 768 nodes by 700, and each of its two rollbacks left 700
// empty nodes. A command that would launch more is decided again with
// multi-node consolidation capped at as many candidates (Karpenter's
// multi-node consolidation takes at most 100, replaced by one node). A
// command that only deletes, or replaces many nodes by a few, waits on
// little: its size stays the budgets' call.
const MaxReplacements = 100

// decideWithin decides, and decides again with multi-node consolidation
// capped at MaxReplacements candidates when the multi-node command found
// launches more replacements than that; the second decision costs a pass
// only then. Only multi-node consolidation is capped: the cap bounds its
// candidates, and consolidation never launches more nodes than it
// removes, so the capped command launches at most MaxReplacements. Other
// methods (drift replaces each node by what its pods need) are returned
// as decided: an error here would skip the memo and block every later
// pass the same way.
func (c *Controller) decideWithin(in *disruption.Input) (*disruption.Decision, error) {
	dec, err := c.decide(in)
	if err != nil || dec.Command == nil || dec.Command.Method != disruption.MethodMultiNode || len(dec.Command.Replacements) <= MaxReplacements {
		return dec, err
	}
	capped := *in
	if capped.Options.MultiNodeMax <= 0 || capped.Options.MultiNodeMax > MaxReplacements {
		capped.Options.MultiNodeMax = MaxReplacements
	}
	return c.decide(&capped)
}

// memoTTL bounds how long an unchanged cluster is not decided on again:
// time alone changes some answers (budget schedules, do-not-disrupt
// durations), so the memo expires (Karpenter's 5 minutes).
const memoTTL = 5 * time.Minute

// memoKey identifies what a decision looks at: the state's generation,
// the NodePools' and PDBs' versions, the CapacityBuffers' virtual pods
// and the commands in flight.
func memoKey(generation uint64, in *disruption.Input, inFlight int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", generation, inFlight)
	names := make([]string, 0, len(in.NodePools))
	for name := range in.NodePools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "/%s@%s", name, in.NodePools[name].ResourceVersion)
	}
	for _, pdb := range in.PDBs {
		fmt.Fprintf(&b, "/%s/%s@%s", pdb.Namespace, pdb.Name, pdb.ResourceVersion)
	}
	// CapacityBuffers change what must stay without any state change.
	for _, p := range in.Cluster.Pods {
		if pods.IsVirtual(p) {
			fmt.Fprintf(&b, "/v:%s", p.UID)
		}
	}
	return b.String()
}

// cleanUp removes what no command in flight accounts for: a
// karpenter.sh/disrupted taint or a DisruptionReason condition left by a
// command that was interrupted (a restart, a lost leadership), on nodes
// that are not being deleted. Karpenter does the same at the start of
// every pass.
func (c *Controller) cleanUp(ctx context.Context) error {
	var errs []error
	for _, sn := range c.opts.State.ReadOnlyNodes() {
		if sn.NodeClaim == nil || !c.nodeClasses.Manages(sn.NodeClaim.Spec.NodeClassRef) || c.queue.Has(sn.Name()) {
			continue
		}
		if sn.NodeClaim.DeletionTimestamp != nil || (sn.Node != nil && sn.Node.DeletionTimestamp != nil) {
			continue
		}
		if sn.Node != nil && v1.HasDisruptedTaint(sn.Node.Spec.Taints) {
			log.FromContext(ctx).Info("removing a disrupted taint no command accounts for", logging.Node, klog.KObj(sn.Node))
			if err := untaint(ctx, c.opts.Client, c.opts.APIReader, sn.Node.Name); err != nil {
				errs = append(errs, err)
			}
		}
		if sn.NodeClaim.StatusConditions().Get(v1.ConditionTypeDisruptionReason) != nil {
			if err := clearDisruptionReason(ctx, c.opts.Client, c.opts.APIReader, sn.NodeClaim.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
