package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// unseenGrace is how long, once a command's replacements are all created,
// one may stay invisible in the cache before the queue asks the API server
// whether it is gone, and how long the API server's "it exists" then
// holds before the queue asks again. Only the API server's answer rolls
// the command back: in conformance run P16 (2,000 pods) the cache had not
// shown one replacement 35 s after its creation and another 41 s after
// it, and two whole-cluster commands were rolled back on replacements
// that were launching. Asking again at most once per grace keeps a
// lagging cache from turning every one-second tick into one uncached GET
// per hidden replacement, against an API server already behind.
const unseenGrace = 30 * time.Second

// finishedMemory is how long candidates of a finished command still count
// as in flight: until the cache shows their NodeClaims deleting, the
// clean-up must not mistake their taint for a stale one.
const finishedMemory = 2 * time.Minute

// deletionRetryWindow is how long the queue keeps retrying (after 1 s,
// the delay doubling to maxDeletionRetryDelay) the deletion of a finished
// command's candidates whose delete failed (an API server restart resets
// the connection). Karpenter, too,
// retries a command's candidate deletions until the command's 10-minute
// limit. Meanwhile the candidates stay tainted and marked, as candidates
// of a command in flight; after it, they are given up to the clean-up.
const deletionRetryWindow = 10 * time.Minute

// maxDeletionRetryDelay bounds the back-off between two such retries.
const maxDeletionRetryDelay = 30 * time.Second

// writeParallelism bounds the API writes one command makes at once (a
// 100-node emptiness command taints and deletes side by side).
const writeParallelism = 20

// Queue carries out commands: it taints the candidates, launches the
// replacements, waits for them to initialise and then deletes the
// candidates, or rolls the command back. It is a leader-elected runnable
// that checks the commands in flight every second.
type Queue struct {
	opts *Options

	mu    sync.Mutex
	items []*item
	// finished maps candidates of finished commands to when they stop
	// counting as in flight.
	finished map[string]time.Time
	// evictions are the pods evicted per finished command, for the
	// trailing-hour gauge.
	evictions []eviction
}

type eviction struct {
	at   time.Time
	pods int
}

// item is one command in flight.
type item struct {
	cmd        *disruption.Command
	candidates []candidate
	// replacements are the names of the NodeClaims created for the command,
	// and uids their UIDs: a name can be reused by a later NodeClaim, and
	// only the object this command created may be deleted or waited on.
	replacements []string
	uids         map[string]types.UID
	seen         map[string]bool
	// confirmed is when the API server last showed a replacement the
	// cache did not: until unseenGrace has passed, it counts as waiting.
	confirmed map[string]time.Time
	// running are the replacements seen launched (a provider ID): one
	// that fails after that halts drift; one whose launch failed (the
	// cloud had no capacity) only rolls the command back, as Karpenter
	// does, and drift tries again.
	running map[string]bool
	// initialized are the replacements seen initialised: one deleted after
	// that did not fail (another command took it, or someone deleted it),
	// so losing it rolls the command back without halting drift.
	initialized map[string]bool
	// launched is set (under Queue.mu) once Execute created every
	// replacement: before that, Process must not look at the item, or a
	// command without its replacements yet would look finished.
	launched bool
	// createdAt is when Execute had created every replacement: the
	// unseen grace and the deadline count from there, not from the
	// decision, as creating hundreds of NodeClaims takes minutes under
	// load (Karpenter's queue, too, times a command from when its
	// replacements were launched).
	createdAt time.Time
	deadline  time.Time
	// deleting is set once the command was carried out but some of its
	// candidates' deletions failed: candidates are then those left to
	// delete, retried until retryUntil.
	deleting   bool
	retryUntil time.Time
	retryAt    time.Time
	retryDelay time.Duration
}

// providerIDs are the cluster state's keys of cs: the provider IDs of
// those launched.
func providerIDs(cs []candidate) []string {
	var ids []string
	for _, c := range cs {
		if c.providerID != "" {
			ids = append(ids, c.providerID)
		}
	}
	return ids
}

// candidate is what the queue needs of a candidate once the Input is gone.
type candidate struct {
	name         string
	node         string // "" when no Node registered
	nodeClaim    string
	nodeClaimUID types.UID
	providerID   string
	nodePool     string
	capacityType string
	pods         int // reschedulable pods the deletion evicts
	// nodeObj and claimObj are the objects events are about.
	nodeObj  *corev1.Node
	claimObj *v1.NodeClaim
}

func newQueue(opts *Options) *Queue {
	return &Queue{opts: opts, finished: map[string]time.Time{}}
}

// Has reports whether the named node is a candidate of a command in flight
// (or of one that just finished).
func (q *Queue) Has(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if until, ok := q.finished[name]; ok && q.opts.Clock.Now().Before(until) {
		return true
	}
	for _, it := range q.items {
		for _, c := range it.candidates {
			if c.name == name {
				return true
			}
		}
	}
	return false
}

// Replaces reports whether nodeClaim is a replacement a command in flight
// waits on: its candidates' pods are bound for it, so no other command
// may take it, however empty it is until they move.
func (q *Queue) Replaces(nodeClaim string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range q.items {
		// Until launched is set, Execute (on the caller's goroutine) is
		// still filling replacements in.
		if it.launched && slices.Contains(it.replacements, nodeClaim) {
			return true
		}
	}
	return false
}

// Len is the number of commands in flight.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Start checks the commands in flight every second until ctx ends.
func (q *Queue) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("disruption.queue"))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.opts.Clock.After(queueTick):
		}
		q.Process(ctx)
	}
}

// Execute starts cmd, whose candidates are Input nodes: taint them, mark
// them in the state, record why on their NodeClaims, and launch the
// replacements. A delete (no replacement) finishes at once; a replace is
// left in the queue until its replacements initialise. Any failure rolls
// the command back.
func (q *Queue) Execute(ctx context.Context, cmd *disruption.Command, in *disruption.Input) error {
	it, err := q.newItem(cmd, in)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	decisionsTotal.With(commandLabels(cmd)).Inc()

	q.opts.State.MarkForDeletion(providerIDs(it.candidates)...)
	errs := make([]error, len(it.candidates))
	workqueue.ParallelizeUntil(ctx, writeParallelism, len(it.candidates), func(i int) {
		c := it.candidates[i]
		if c.node != "" {
			if err := taint(ctx, q.opts.Client, q.opts.APIReader, c.node); err != nil {
				errs[i] = err
				return
			}
		}
		errs[i] = setDisruptionReason(ctx, q.opts.Client, q.opts.APIReader, c.nodeClaim, cmd, q.opts.Clock.Now())
	})
	if err := errors.Join(errs...); err != nil {
		q.rollBack(ctx, it, fmt.Sprintf("marking the candidates failed: %v", err), false)
		return fmt.Errorf("starting %s command: %w", cmd.Method, err)
	}
	if len(cmd.Replacements) == 0 {
		q.finish(ctx, it)
		return nil
	}

	replaces := make([]types.UID, 0, len(it.candidates))
	for _, c := range it.candidates {
		replaces = append(replaces, c.nodeClaimUID)
	}
	created, err := q.opts.NodeClaims.CreateReplacements(ctx, in.NodePools, cmd.Replacements, metricReason(cmd.Reason), replaces)
	for _, nc := range created {
		if nc != nil {
			it.replacements = append(it.replacements, nc.Name)
			it.uids[nc.Name] = nc.UID
		}
	}
	if err == nil && len(it.replacements) < len(cmd.Replacements) {
		err = fmt.Errorf("%d of %d replacements were not created", len(cmd.Replacements)-len(it.replacements), len(cmd.Replacements))
	}
	if err != nil {
		// A command whose replacements cannot all launch cannot happen;
		// the ones that were created would only run empty.
		q.deleteReplacements(ctx, it)
		q.rollBack(ctx, it, fmt.Sprintf("creating replacement nodeclaims failed: %v", err), false)
		return fmt.Errorf("launching replacements: %w", err)
	}
	for _, nc := range created {
		q.opts.Recorder.Publish(
			events.Normal(nc, events.DisruptionLaunching, "Launch", "Launching NodeClaim: %s", decisionText(cmd)),
			events.Normal(nc, events.DisruptionWaitingReadiness, "Wait", "Waiting on readiness to continue disruption"),
		)
	}
	if plantedbug.Active(plantedbug.DeleteBeforeReplacement) {
		q.finish(ctx, it)
		return nil
	}
	q.mu.Lock()
	it.launched = true
	it.createdAt = q.opts.Clock.Now()
	it.deadline = it.createdAt.Add(q.opts.ReplacementTimeout)
	q.mu.Unlock()
	log.FromContext(ctx).Info("launched replacements, waiting for them to initialize", logging.NodeClaims, strings.Join(it.replacements, ","), logging.Deadline, it.deadline.UTC().Format(time.RFC3339))
	return nil
}

func (q *Queue) newItem(cmd *disruption.Command, in *disruption.Input) (*item, error) {
	byName := make(map[string]*disruption.Node, len(in.Nodes))
	for i := range in.Nodes {
		byName[in.Nodes[i].Name] = &in.Nodes[i]
	}
	it := &item{cmd: cmd, seen: map[string]bool{}, confirmed: map[string]time.Time{}, uids: map[string]types.UID{}, running: map[string]bool{}, initialized: map[string]bool{}}
	for _, name := range cmd.Candidates {
		n, ok := byName[name]
		if !ok || n.NodeClaim == nil {
			return nil, fmt.Errorf("command candidate %q is not a managed node of the input", name)
		}
		c := candidate{
			name:         name,
			nodeClaim:    n.NodeClaim.Name,
			nodeClaimUID: n.NodeClaim.UID,
			providerID:   n.NodeClaim.Status.ProviderID,
			nodePool:     n.NodePool,
			capacityType: n.CapacityType,
			pods:         reschedulable(n.Pods),
			claimObj:     n.NodeClaim,
		}
		if n.Node != nil {
			c.node = n.Node.Name
			c.nodeObj = n.Node
			if n.Node.Spec.ProviderID != "" {
				c.providerID = n.Node.Spec.ProviderID
			}
		}
		it.candidates = append(it.candidates, c)
	}
	return it, nil
}

// Process moves every command in flight along: finish those whose
// replacements all initialised, roll back those whose replacements failed
// or timed out.
func (q *Queue) Process(ctx context.Context) {
	q.mu.Lock()
	var items []*item
	for _, it := range q.items {
		if it.launched {
			items = append(items, it)
		}
	}
	q.mu.Unlock()
	for _, it := range items {
		q.process(ctx, it)
	}
	q.updateEvictionGauge()
}

func (q *Queue) process(ctx context.Context, it *item) {
	now := q.opts.Clock.Now()
	if it.deleting {
		if !now.Before(it.retryAt) {
			q.finish(ctx, it)
		}
		return
	}
	var waiting []string
	for _, name := range it.replacements {
		nc := &v1.NodeClaim{}
		err := q.opts.Client.Get(ctx, types.NamespacedName{Name: name}, nc)
		if apierrors.IsNotFound(err) {
			if !it.seen[name] && now.Sub(it.createdAt) <= unseenGrace {
				waiting = append(waiting, name+" (not in the cache yet)")
				continue
			}
			if at, ok := it.confirmed[name]; ok && now.Sub(at) < unseenGrace {
				waiting = append(waiting, name+" (not in the cache yet; the API server holds it)")
				continue
			}
			// The cache may only lag: ask the API server.
			err = q.opts.APIReader.Get(ctx, types.NamespacedName{Name: name}, nc)
			if err == nil {
				it.confirmed[name] = now
			}
		}
		switch {
		case apierrors.IsNotFound(err):
			q.rollBack(ctx, it, fmt.Sprintf("replacement nodeclaim %s was deleted %s", name, it.deletedStage(name)), it.failedToInitialize(name))
			return
		case err != nil:
			log.FromContext(ctx).Error(err, "reading replacement nodeclaim", logging.NodeClaim, klog.KRef("", name))
			return
		case it.uids[name] != "" && nc.UID != it.uids[name]:
			q.rollBack(ctx, it, fmt.Sprintf("replacement nodeclaim %s was deleted %s (a new NodeClaim has its name)", name, it.deletedStage(name)), it.failedToInitialize(name))
			return
		}
		it.seen[name] = true
		if nc.Status.ProviderID != "" {
			it.running[name] = true
		}
		initialized := nc.StatusConditions().IsTrue(v1.ConditionTypeInitialized)
		if initialized {
			it.initialized[name] = true
		}
		if nc.DeletionTimestamp != nil {
			q.rollBack(ctx, it, fmt.Sprintf("replacement nodeclaim %s is being deleted %s%s", name, it.deletedStage(name), lastCondition(nc)), it.failedToInitialize(name))
			return
		}
		if !initialized {
			waiting = append(waiting, name+lastCondition(nc))
		}
	}
	if len(waiting) == 0 {
		q.finish(ctx, it)
		return
	}
	if !now.Before(it.deadline) {
		q.rollBack(ctx, it, fmt.Sprintf("replacements did not initialize within %s: %s", q.opts.ReplacementTimeout, strings.Join(waiting, "; ")), true)
	}
}

// deletedStage says when a replacement that is gone was lost: before it
// launched (the cloud refused it), before it initialised once running, or
// after it initialised (it did not fail).
func (it *item) deletedStage(name string) string {
	switch {
	case it.initialized[name]:
		return "after it initialized"
	case it.running[name]:
		return "before it initialized"
	}
	return "before it launched"
}

// failedToInitialize reports whether a replacement that is gone failed
// once running, before it initialised: the one loss that halts drift
// (a NodeClaim of the new template that does not come up). One whose
// launch failed is the cloud's capacity; one deleted after it initialised
// is another writer's doing (aws 3090: an emptiness command took it).
func (it *item) failedToInitialize(name string) bool {
	return it.running[name] && !it.initialized[name]
}

// lastCondition says where a replacement stands, for messages.
func lastCondition(nc *v1.NodeClaim) string {
	for _, t := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		c := nc.StatusConditions().Get(t)
		if c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return fmt.Sprintf(" (not %s)", strings.ToLower(t))
			}
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return fmt.Sprintf(" (%s %s: %s)", t, c.Status, msg)
		}
	}
	return ""
}

// finish deletes the candidates' NodeClaims: the termination controllers
// drain them (PDBs, terminationGracePeriod) and terminate the instances.
// Candidates whose deletion failed keep the command in the queue, and
// Process calls finish again for them until deletionRetryWindow passes.
func (q *Queue) finish(ctx context.Context, it *item) {
	logger := log.FromContext(ctx)
	now := q.opts.Clock.Now()
	deleted := make([]bool, len(it.candidates))
	workqueue.ParallelizeUntil(ctx, writeParallelism, len(it.candidates), func(i int) {
		c := it.candidates[i]
		err := q.opts.Client.Delete(ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: c.nodeClaim}}, client.Preconditions{UID: &c.nodeClaimUID})
		// A conflict is the UID precondition failing: the candidate's
		// NodeClaim is gone and its name is another's, as for NotFound.
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			logger.Error(err, "deleting disrupted nodeclaim", logging.NodeClaim, klog.KRef("", c.nodeClaim))
			return
		}
		deleted[i] = true
	})
	pods := 0
	msg := fmt.Sprintf("Disrupting Node: %s", decisionText(it.cmd))
	var undeleted []candidate
	for i, c := range it.candidates {
		if !deleted[i] {
			undeleted = append(undeleted, c)
			continue
		}
		pods += c.pods
		metrics.NodeClaimsDisrupted.WithLabelValues(metricReason(it.cmd.Reason), c.nodePool, c.capacityType).Inc()
		evictionsTotal.WithLabelValues(c.nodePool, metricReason(it.cmd.Reason)).Add(float64(c.pods))
		q.opts.Recorder.Publish(events.Normal(c.claimObj, events.DisruptionTerminating, "Disrupt", "%s", msg))
		if c.nodeObj != nil {
			q.opts.Recorder.Publish(events.Normal(c.nodeObj, events.DisruptionTerminating, "Disrupt", "%s", msg))
		}
		logger.Info("disrupting node", logging.Node, klog.KRef("", c.node), logging.NodeClaim, klog.KRef("", c.nodeClaim), logging.NodePool, klog.KRef("", c.nodePool), logging.Reason, it.cmd.Reason, logging.Decision, decision(it.cmd))
	}
	if len(undeleted) > 0 {
		first := it.retryUntil.IsZero()
		if first {
			it.retryUntil = now.Add(deletionRetryWindow)
		}
		names := make([]string, len(undeleted))
		for i, c := range undeleted {
			names[i] = c.nodeClaim
		}
		if now.Before(it.retryUntil) {
			// Retried after 1 s, doubling to 30 s: an API server
			// restart is over in seconds, and one that refuses for
			// longer is not asked 20 times a second meanwhile.
			it.retryDelay = min(max(2*it.retryDelay, queueTick), maxDeletionRetryDelay)
			it.retryAt = now.Add(it.retryDelay)
			q.mu.Lock()
			q.forget(it.candidates, deleted, now)
			it.candidates, it.deleting, it.launched = undeleted, true, true
			if pods > 0 {
				q.evictions = append(q.evictions, eviction{at: now, pods: pods})
			}
			q.mu.Unlock()
			if first {
				logger.Info("retrying the deletion of disrupted nodeclaims", logging.NodeClaims, strings.Join(names, ","), logging.Deadline, it.retryUntil.UTC().Format(time.RFC3339))
			}
			return
		}
		// Given up: left marked, the engine would take these candidates
		// for deleting for good, never a candidate and always counted
		// against their NodePool's budget (chaos round sim 2062: 22 such
		// nodes used a 50% budget of 44 and no drifted node was
		// replaced). Their taint stays until the finished memory lapses
		// and the clean-up removes it: a delete may still have been
		// applied.
		logger.Info("giving up deleting disrupted nodeclaims", logging.NodeClaims, strings.Join(names, ","))
		q.opts.State.UnmarkForDeletion(providerIDs(undeleted)...)
	}
	q.mu.Lock()
	q.remove(it)
	q.forget(it.candidates, nil, now)
	q.evictions = append(q.evictions, eviction{at: now, pods: pods})
	q.mu.Unlock()
	q.updateEvictionGauge()
}

// forget moves candidates (those deleted, or all when deleted is nil) to
// the finished memory, and drops what lapsed from it; q.mu must be held.
func (q *Queue) forget(candidates []candidate, deleted []bool, now time.Time) {
	for i, c := range candidates {
		if deleted == nil || deleted[i] {
			q.finished[c.name] = now.Add(finishedMemory)
		}
	}
	for name, until := range q.finished {
		if !now.Before(until) {
			delete(q.finished, name)
		}
	}
}

// rollBack undoes a command: the candidates lose the taint, the
// DisruptionReason and the state's mark, and say why. replacementFailed
// is true when a replacement failed to initialise, which halts drift for
// the NodePool of a drift command.
func (q *Queue) rollBack(ctx context.Context, it *item, why string, replacementFailed bool) {
	logger := log.FromContext(ctx)
	logger.Info("rolling back disruption command", logging.Method, it.cmd.Method, logging.Candidates, strings.Join(it.cmd.Candidates, ","), logging.Reason, why)
	queueFailures.With(commandLabels(it.cmd)).Inc()
	for _, c := range it.candidates {
		if c.node != "" {
			if err := untaint(ctx, q.opts.Client, q.opts.APIReader, c.node); err != nil {
				logger.Error(err, "removing disrupted taint during rollback", logging.Node, klog.KRef("", c.node))
			}
		}
		about := []runtime.Object{c.claimObj}
		if c.nodeObj != nil {
			about = append(about, c.nodeObj)
		}
		for _, obj := range about {
			q.opts.Recorder.Publish(events.Warning(obj, events.DisruptionBlocked, "RollBack",
				"Disruption (%s) rolled back, the node keeps running: %s", decisionText(it.cmd), why))
		}
		if err := clearDisruptionReason(ctx, q.opts.Client, q.opts.APIReader, c.nodeClaim); err != nil {
			logger.Error(err, "clearing DisruptionReason during rollback", logging.NodeClaim, klog.KRef("", c.nodeClaim))
		}
	}
	q.opts.State.UnmarkForDeletion(providerIDs(it.candidates)...)
	q.mu.Lock()
	q.remove(it)
	q.mu.Unlock()
	if replacementFailed && it.cmd.Reason == disruption.ReasonDrifted {
		pools := map[string]bool{}
		for _, c := range it.candidates {
			pools[c.nodePool] = true
		}
		names := make([]string, 0, len(pools))
		for p := range pools {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			if err := haltDrift(ctx, q.opts, p, why); err != nil {
				logger.Error(err, "halting drift", logging.NodePool, klog.KRef("", p))
			}
		}
	}
}

// deleteReplacements deletes the replacements a failed command created.
func (q *Queue) deleteReplacements(ctx context.Context, it *item) {
	for _, name := range it.replacements {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		// The UID precondition keeps a later NodeClaim that reuses the name
		// (not this command's) from being deleted.
		var opts []client.DeleteOption
		if uid := it.uids[name]; uid != "" {
			opts = append(opts, client.Preconditions{UID: &uid})
		}
		if err := q.opts.Client.Delete(ctx, nc, opts...); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			log.FromContext(ctx).Error(err, "deleting replacement of a failed command", logging.NodeClaim, klog.KRef("", name))
		}
	}
}

// remove drops it from the queue; q.mu must be held.
func (q *Queue) remove(it *item) {
	for i, x := range q.items {
		if x == it {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return
		}
	}
}

func (q *Queue) updateEvictionGauge() {
	now := q.opts.Clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.evictions[:0]
	total := 0
	for _, e := range q.evictions {
		if now.Sub(e.at) < time.Hour {
			kept = append(kept, e)
			total += e.pods
		}
	}
	q.evictions = kept
	evictionsLastHour.Set(float64(total))
}

// EvictionsLastHour is the number of workload pods the commands finished
// in the trailing hour evicted.
func (q *Queue) EvictionsLastHour() int {
	q.updateEvictionGauge()
	q.mu.Lock()
	defer q.mu.Unlock()
	total := 0
	for _, e := range q.evictions {
		total += e.pods
	}
	return total
}

// reschedulable counts the pods a node's deletion evicts and that must
// land elsewhere (pods.IsReschedulable, the meaning the disruption engine's
// PodsMoved uses too).
func reschedulable(onNode []*corev1.Pod) int {
	n := 0
	for _, p := range onNode {
		if pods.IsReschedulable(p) {
			n++
		}
	}
	return n
}
