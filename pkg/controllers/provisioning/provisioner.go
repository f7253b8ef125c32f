package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/livemodel"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/nodeclaims"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/state"
)

// controllerName is the provisioner's controller label on metrics
// (Karpenter's).
const controllerName = "provisioner"

// SolveFunc runs the scheduling simulation on one snapshot.
type SolveFunc func(*scheduling.Snapshot) (*scheduling.Plan, error)

// Model builds the snapshot of the live cluster a pass plans on
// (livemodel.Builder; disruption and the status page read the same).
type Model interface {
	Build(ctx context.Context) (*livemodel.Snapshot, error)
}

// NodeClaimCreator creates the NodeClaims a plan asks for
// (nodeclaims.Creator; disruption's replacements use the same).
type NodeClaimCreator interface {
	Create(ctx context.Context, claims []nodeclaims.Planned) ([]*v1.NodeClaim, error)
}

// ClusterState is the part of pkg/state's Cluster the provisioner uses.
type ClusterState interface {
	// Synced reports whether the state has seen every Node and NodeClaim
	// the API server holds; planning on a partial picture would launch
	// capacity that already exists.
	Synced(ctx context.Context) bool
}

// Options configure the provisioner.
type Options struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Model is the snapshot of the live cluster each batch plans on.
	Model Model
	// NodeClaims creates the planned NodeClaims.
	NodeClaims NodeClaimCreator
	// State tells whether the model has seen the whole cluster.
	State ClusterState
	// Nominations are where the provisioner records its plan's pods
	// (state.Nominations): a nominated pod is not planned again while its
	// nomination holds, and one whose nomination ends early is planned at
	// once.
	Nominations state.Nominator
	Recorder    events.Recorder
	Clock       clock.Clock
	Solve       SolveFunc

	BatchIdleDuration time.Duration
	BatchMaxDuration  time.Duration

	// Buffers, when set, is told after every pass how the plan placed
	// each CapacityBuffer's virtual pods (the buffers' Provisioning
	// condition).
	Buffers BufferReporter
}

// BufferReporter takes each pass's outcome for the CapacityBuffers whose
// virtual pods it planned (the capacitybuffer controller's status writer).
type BufferReporter interface {
	Report(ctx context.Context, outcomes map[types.NamespacedName]*capacitybuffer.Outcome)
}

func (o *Options) validate() error {
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if o.State == nil {
		errs = append(errs, errors.New("cluster state is required"))
	}
	if o.Nominations == nil {
		errs = append(errs, errors.New("nominations are required"))
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
	if o.Clock == nil {
		errs = append(errs, errors.New("clock is required"))
	}
	if o.Solve == nil {
		errs = append(errs, errors.New("solve function is required"))
	}
	if o.BatchIdleDuration <= 0 || o.BatchMaxDuration < o.BatchIdleDuration {
		errs = append(errs, fmt.Errorf("batch durations idle=%s max=%s: idle must be positive and max at least idle", o.BatchIdleDuration, o.BatchMaxDuration))
	}
	return errors.Join(errs...)
}

// Provisioner turns batches of unschedulable pods into NodeClaims. It is a
// leader-elected singleton: one loop, one batch at a time.
type Provisioner struct {
	opts    Options
	batcher *Batcher
	// passMu keeps a batch and a gang's plan (PlanGang, CreateGang) from
	// running at once and counting the same room twice.
	passMu sync.Mutex

	// reported remembers the last event given to each pending pod, so a pod
	// that stays pending does not get the same event every batch.
	mu       sync.Mutex
	reported map[types.UID]string

	// retry plans again when a launch back-off that keeps pods waiting
	// ends.
	retry retryTimer
	// retryFailed plans again after a pass that failed (see Start).
	retryFailed retryTimer
	// warned remembers the pods already warned about (scheduling's
	// PodWarnings), apart from reported so a warning and the pod's
	// scheduling outcome do not replace each other.
	warned map[types.UID]bool
	// unschedulable is the last pass's verdicts on the pods it could not
	// place, for the status page (guarded by mu).
	unschedulable []scheduling.PodError
}

// NewProvisioner validates opts and returns a Provisioner.
func NewProvisioner(opts Options) (*Provisioner, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("provisioner options: %w", err)
	}
	return &Provisioner{
		opts:     opts,
		batcher:  NewBatcher(opts.Clock, opts.BatchIdleDuration, opts.BatchMaxDuration),
		reported: map[types.UID]string{},
		warned:   map[types.UID]bool{},
	}, nil
}

// Trigger asks for a batch that includes the pod with uid.
func (p *Provisioner) Trigger(uid types.UID) { p.batcher.Trigger(uid) }

// Start runs batches until ctx ends. It implements manager.Runnable; the
// manager runs it only on the elected leader.
func (p *Provisioner) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("provisioner")
	ctx = log.IntoContext(ctx, logger)
	defer p.retry.cancel()
	defer p.retryFailed.cancel()
	failures := 0
	for p.batcher.Wait(ctx) {
		if err := p.waitForSync(ctx); err != nil {
			return nil
		}
		if _, err := p.Provision(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// The pods are still pending, and the pod trigger would bring
			// them back within its 10 s recheck; in a burst a NodeClaim
			// create that failed on a transient API error left its pod
			// unplanned far longer (its trigger's batches kept being held
			// open). Try again after a second (plus the batch's idle
			// time), backing off while the passes keep failing.
			failures++
			retry := failedPassRetry(failures)
			logger.Error(err, "provisioning failed", logging.RetryIn, retry.String())
			p.retryFailed.wake(p.opts.Clock, p.opts.Clock.Now().Add(retry), func() { p.Trigger(failedPassTrigger) })
			continue
		}
		failures = 0
	}
	return nil
}

// failedPassTrigger is the batcher key of a retry after a failed pass.
const failedPassTrigger = types.UID("failed-pass")

// failedPassRetry is how long after the nth failed pass in a row the next
// one runs: 1 s, doubling, at most 30 s.
func failedPassRetry(n int) time.Duration {
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}

// waitForSync blocks until the cluster state is synced or ctx ends.
func (p *Provisioner) waitForSync(ctx context.Context) error {
	logged := false
	for !p.opts.State.Synced(ctx) {
		if !logged {
			log.FromContext(ctx).Info("waiting for cluster state to sync before provisioning")
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.opts.Clock.After(100 * time.Millisecond):
		}
	}
	return nil
}

// Result is what one provisioning pass did.
type Result struct {
	// Pending is how many provisionable pods the pass saw (CapacityBuffers'
	// virtual pods not counted).
	Pending int
	// Created are the NodeClaims created (or found already created under the
	// same deterministic name).
	Created []*v1.NodeClaim
	// Unschedulable are the pods that fit nowhere, with why (virtual pods
	// are in Buffers instead).
	Unschedulable []scheduling.PodError
	// Buffers is where the plan put each CapacityBuffer's virtual pods.
	Buffers map[types.NamespacedName]*capacitybuffer.Outcome
}

// Provision runs one pass: snapshot, solve, create NodeClaims, report.
func (p *Provisioner) Provision(ctx context.Context) (*Result, error) {
	p.passMu.Lock()
	defer p.passMu.Unlock()
	ctx = metrics.WithController(ctx, controllerName)
	logger := log.FromContext(ctx)
	p.reportEnded()
	v, err := p.opts.Model.Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshotting cluster: %w", err)
	}
	// Virtual pods are planned like the others but are no pod of the
	// cluster: metrics, warnings and events are the real pods' alone.
	real := slices.DeleteFunc(slices.Clone(v.Cluster.Pods), pods.IsVirtual)
	metrics.PodsPending.Set(float64(len(real)))
	metrics.SchedulerQueueDepth.WithLabelValues(controllerName).Set(float64(len(real)))
	p.opts.Nominations.Seen(real)
	res := &Result{Pending: len(real)}
	if len(v.Cluster.Pods) == 0 {
		publishUnschedulable(nil)
		p.setUnschedulable(nil)
		p.forgetExcept(nil)
		return res, nil
	}
	logger.V(1).Info("found provisionable pods", logging.Count, len(real), logging.Virtual, len(v.Cluster.Pods)-len(real))
	p.warn(real)

	start := p.opts.Clock.Now()
	// Wall time, as the simulation's own cost: a test's fake clock must not
	// see the gauge's timer among its waiters.
	solved := metrics.StartUnfinishedWork(clock.RealClock{}, controllerName)
	plan, err := p.opts.Solve(v.Cluster)
	solved()
	metrics.SolverDuration.WithLabelValues(controllerName).Observe(p.opts.Clock.Since(start).Seconds())
	if err != nil {
		return nil, fmt.Errorf("solving for %d pods: %w", len(v.Cluster.Pods), err)
	}
	if len(plan.NewNodeClaims) > 0 {
		logger.Info("computed new nodeclaims to fit pods", logging.NodeClaims, len(plan.NewNodeClaims), logging.Pods, countPods(plan.NewNodeClaims), logging.Duration, p.opts.Clock.Since(start).String())
	}

	claims, err := p.claimsFor(v, plan.NewNodeClaims)
	if err != nil {
		return nil, err
	}
	created, err := p.opts.NodeClaims.Create(ctx, claims)
	for _, nc := range created {
		if nc != nil {
			res.Created = append(res.Created, nc)
		}
	}
	seen := p.nominate(v, plan, claims, created)
	for _, pe := range plan.Unschedulable {
		if !pods.IsVirtual(pe.Pod) {
			res.Unschedulable = append(res.Unschedulable, pe)
		}
	}
	launched := make([]string, len(created))
	for i, nc := range created {
		if nc != nil {
			launched[i] = nc.Name
		}
	}
	res.Buffers = capacitybuffer.Outcomes(v.Cluster, plan, launched, func(pe scheduling.PodError) string { return describeReasons(pe, v.Skipped) })
	if p.opts.Buffers != nil {
		p.opts.Buffers.Report(ctx, res.Buffers)
	}
	for _, pe := range res.Unschedulable {
		seen[pe.Pod.UID] = true
		p.opts.Nominations.Release(pe.Pod)
		p.report(events.Warning(pe.Pod, events.FailedScheduling, "Provision", "Failed to schedule pod, %s", describeReasons(pe, v.Skipped)))
	}
	if len(res.Unschedulable) > 0 {
		logUnschedulable(logger, res.Unschedulable, v.Skipped)
	}
	p.reportIncompatibleNodePools(v, res.Unschedulable)
	publishUnschedulable(res.Unschedulable)
	p.retry.wake(p.opts.Clock, earliestRetry(plan.Unschedulable), func() { p.Trigger(backoffTrigger) })
	p.setUnschedulable(res.Unschedulable)
	p.forgetExcept(seen)
	return res, err
}

// claimsFor pairs each planned NodeClaim with its NodePool. The plan is
// launched as it is: the solver already kept NodePool limits (with the
// in-flight NodeClaims counted in the snapshot's InUse), the instance-type
// cap and minValues.
func (p *Provisioner) claimsFor(v *livemodel.Snapshot, planned []*scheduling.NewNodeClaim) ([]nodeclaims.Planned, error) {
	out := make([]nodeclaims.Planned, 0, len(planned))
	for _, nc := range planned {
		np, ok := v.NodePools[nc.NodePool]
		if !ok {
			return nil, fmt.Errorf("the plan names nodepool %s, which was not in the snapshot", nc.NodePool)
		}
		out = append(out, nodeclaims.Planned{NodePool: np, Planned: nc, Failures: v.Failures[nc.NodePool]})
	}
	return out, nil
}

// nominate records every placed pod in the cluster state against the
// NodeClaim that will run it, so the next batch does not plan it again,
// and tells the pod with a Nominated event. It returns the pods it saw.
// CapacityBuffers' virtual pods are never nominated: the room they take
// is planned again in every pass.
func (p *Provisioner) nominate(v *livemodel.Snapshot, plan *scheduling.Plan, claims []nodeclaims.Planned, created []*v1.NodeClaim) map[types.UID]bool {
	seen := map[types.UID]bool{}
	for i, c := range claims {
		if created[i] == nil {
			continue
		}
		for _, pod := range c.Planned.Pods {
			if pods.IsVirtual(pod) {
				continue
			}
			seen[pod.UID] = true
			p.opts.Nominations.Nominate(pod, created[i].Name)
			p.report(events.Normal(pod, events.Nominated, "Provision", "Pod should schedule on: nodeclaim/%s", created[i].Name))
		}
	}
	nodes := make(map[string]*scheduling.ExistingNode, len(v.Cluster.Nodes))
	for _, n := range v.Cluster.Nodes {
		nodes[n.Name] = n
	}
	for _, placement := range plan.Existing {
		target := nodes[placement.Node]
		for _, pod := range placement.Pods {
			if pods.IsVirtual(pod) {
				continue
			}
			seen[pod.UID] = true
			// A node joiner does not manage holds no nomination: the
			// decision is recorded, and an earlier nomination (to a
			// NodeClaim that no longer held the pod) ends with it.
			var nodeClaim string
			if target != nil {
				nodeClaim = target.NodeClaim
			}
			p.opts.Nominations.Nominate(pod, nodeClaim)
			p.report(events.Normal(pod, events.Nominated, "Provision", "Pod should schedule on: %s", describeTarget(target, placement.Node)))
		}
	}
	return seen
}

// reportEnded tells each pod whose nomination ended early that it is being
// planned again, and why.
func (p *Provisioner) reportEnded() {
	for _, e := range p.opts.Nominations.TakeEnded() {
		switch e.Reason {
		case state.EndedNodeFilledUp:
			p.report(events.Normal(e.Pod, events.NominationEnded, "Provision", "Pod was planned for node/%s (nodeclaim/%s), which filled up; planning again", e.Node, e.NodeClaim))
		case state.EndedNodeClaimFailed:
			p.report(events.Normal(e.Pod, events.NominationEnded, "Provision", "Pod was planned for nodeclaim/%s, which failed; planning again", e.NodeClaim))
		default:
			p.report(events.Normal(e.Pod, events.NominationEnded, "Provision", "Pod was planned for nodeclaim/%s, which was deleted; planning again", e.NodeClaim))
		}
	}
}

// describeTarget names an existing placement for a Nominated event.
func describeTarget(n *scheduling.ExistingNode, name string) string {
	if n != nil && n.NodeClaim == n.Name {
		return "nodeclaim/" + name
	}
	return "node/" + name
}

// report publishes e about a pod unless the pod already got this exact
// event: a pod that stays pending gets one event per distinct outcome, not
// one per batch.
func (p *Provisioner) report(e events.Event) {
	uid := e.Regarding.(*corev1.Pod).UID
	key := e.Reason + "\x00" + e.Message
	p.mu.Lock()
	if p.reported[uid] == key {
		p.mu.Unlock()
		return
	}
	p.reported[uid] = key
	p.mu.Unlock()
	p.opts.Recorder.Publish(e)
}

// warn publishes, once per pending pod, a Warning event for each of
// scheduling's warnings about it (a pod without requests): the pod is
// still planned.
func (p *Provisioner) warn(pods []*corev1.Pod) {
	for _, pod := range pods {
		ws := scheduling.PodWarnings(pod)
		if len(ws) == 0 {
			continue
		}
		p.mu.Lock()
		done := p.warned[pod.UID]
		p.warned[pod.UID] = true
		p.mu.Unlock()
		if done {
			continue
		}
		for _, w := range ws {
			p.opts.Recorder.Publish(events.Warning(pod, warningReason[w.Kind()], "Provision", "%s", scheduling.Message(w)))
		}
	}
}

// reportIncompatibleNodePools gives each NodePool none of whose instance
// types survives its own requirements (or whose node class offers none) a
// NoCompatibleInstanceTypes event, as Karpenter declares it: every pod it
// was meant for says so too, but the NodePool is where the fix goes. The
// recorder's dedupe keeps it to one event per NodePool while it lasts.
func (p *Provisioner) reportIncompatibleNodePools(v *livemodel.Snapshot, errs []scheduling.PodError) {
	const fix = "; widen its requirements or check its node class"
	for name, np := range v.NoTypes {
		p.opts.Recorder.Publish(events.Warning(np, events.NoCompatibleInstanceTypes, "Provision", "NodePool %s: its node class offers no instance types%s", name, fix))
	}
	seen := map[string]bool{}
	for _, pe := range errs {
		for name, r := range pe.NodePools {
			nit, ok := r.(scheduling.NoInstanceType)
			if !ok || nit.Cause != scheduling.NoTypes || seen[name] || v.NodePools[name] == nil {
				continue
			}
			seen[name] = true
			p.opts.Recorder.Publish(events.Warning(v.NodePools[name], events.NoCompatibleInstanceTypes, "Provision",
				"NodePool %s: no instance type meets its requirements (%s)%s", name, strings.Join(nit.Requirements, ", "), fix))
		}
	}
}

// warningReason is the event reason of each warning kind.
var warningReason = map[scheduling.ReasonKind]string{
	scheduling.KindNoRequests: events.NoResourceRequests,
}

// Unschedulable returns the last pass's verdicts on the pods it could not
// place, with the solver's typed reasons. The pods are the pass's copies:
// callers must not mutate them.
func (p *Provisioner) Unschedulable() []scheduling.PodError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unschedulable)
}

func (p *Provisioner) setUnschedulable(errs []scheduling.PodError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unschedulable = slices.Clone(errs)
}

// forgetExcept drops the memory of events for pods no longer pending.
func (p *Provisioner) forgetExcept(keep map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.reported {
		if !keep[uid] {
			delete(p.reported, uid)
		}
	}
	for uid := range p.warned {
		if !keep[uid] {
			delete(p.warned, uid)
		}
	}
}

func countPods(ncs []*scheduling.NewNodeClaim) int {
	n := 0
	for _, nc := range ncs {
		n += len(nc.Pods)
	}
	return n
}
