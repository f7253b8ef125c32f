package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/events"
	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// report publishes what a decision found: the budget left per NodePool
// and reason, the nodes eligible per reason, a DisruptionBlocked event for
// every node a method would consider but may not touch, and one for every
// NodePool whose budget blocks a reason that has candidates (with a debug
// line saying what holds the budget).
func (c *Controller) report(ctx context.Context, in *disruption.Input, dec *disruption.Decision) {
	for pool, reasons := range dec.Allowed {
		for reason, n := range reasons {
			allowedDisruptions.WithLabelValues(pool, metricReason(reason)).Set(float64(n))
		}
	}
	eligible := map[disruption.Reason]int{}
	wanted := map[string]map[disruption.Reason]bool{}
	for i, v := range dec.Verdicts {
		if i >= len(in.Nodes) {
			break
		}
		n := &in.Nodes[i]
		reasons := reasonsFor(n, v.Empty, in.NodePools[n.NodePool])
		if len(reasons) == 0 || n.Deleting || n.Disrupting || !n.Initialized {
			continue
		}
		if wanted[n.NodePool] == nil {
			wanted[n.NodePool] = map[disruption.Reason]bool{}
		}
		for _, r := range reasons {
			wanted[n.NodePool][r] = true
		}
		if v.Candidate {
			for _, r := range reasons {
				eligible[r]++
			}
		}
		// The verdicts are stored where users and `joiner explain` look:
		// events on the Node and its NodeClaim.
		if len(v.Ownerless) > 0 && (v.Candidate || v.Command != "") {
			e := events.Warning(nil, events.OwnerlessPods, "Disrupt", "%s", disruption.OwnerlessWarning(v.Ownerless))
			e.DedupeTimeout = unconsolidatableDedupe
			c.publishAbout(n, e)
		}
		switch {
		case !v.Blocked.IsZero():
			c.publishAbout(n, events.Normal(nil, events.DisruptionBlocked, "Disrupt", "%s", v.Blocked))
		case !v.Unconsolidatable.IsZero() && v.Command == "":
			e := events.Normal(nil, events.Unconsolidatable, "Consolidate", "%s", v.Unconsolidatable)
			e.DedupeTimeout = unconsolidatableDedupe
			c.publishAbout(n, e)
		}
	}
	for _, r := range v1.DisruptionReasons {
		eligibleNodes.WithLabelValues(metricReason(r)).Set(float64(eligible[r]))
	}
	blocked := map[string]string{}
	for pool, reasons := range wanted {
		np := in.NodePools[pool]
		if np == nil {
			continue
		}
		for r := range reasons {
			if allowed, ok := dec.Allowed[pool][r]; ok && allowed == 0 {
				c.opts.Recorder.Publish(events.Normal(np, events.DisruptionBlocked, "Disrupt",
					"No allowed disruptions for disruption reason %s due to blocking budget", r))
				blocked[pool+"/"+string(r)] = c.logBlocked(ctx, in, np, r)
			}
		}
	}
	c.blocked = blocked
}

// logBlocked says, at debug level, that np's budget blocks reason r, and
// which of its nodes hold the budget: a pass that decides nothing logs
// nothing else (chaos round sim 2062: 11 silent minutes while 22 nodes
// wrongly marked deleting held a budget of 22). The line is written when
// the pool's picture changes, not on every pass; it returns the picture.
func (c *Controller) logBlocked(ctx context.Context, in *disruption.Input, np *v1.NodePool, r disruption.Reason) string {
	var nodes, notReady int
	var deleting, disrupting []string
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if n.NodePool != np.Name || !n.CountsTowardBudget() {
			continue
		}
		nodes++
		switch {
		case !n.ConsumesBudget():
		case n.Deleting:
			deleting = append(deleting, n.Name)
		case n.Disrupting:
			disrupting = append(disrupting, n.Name)
		default:
			notReady++
		}
	}
	picture := fmt.Sprintf("%d/%v/%v/%d", nodes, deleting, disrupting, notReady)
	if c.blocked[np.Name+"/"+string(r)] != picture {
		log.FromContext(ctx).V(1).Info("disruption budget blocks a reason", logging.NodePool, klog.KObj(np), logging.Reason, r,
			logging.Nodes, nodes, logging.Deleting, strings.Join(deleting, ","), logging.Disrupting, strings.Join(disrupting, ","), logging.NotReady, notReady)
	}
	return picture
}

// unconsolidatableDedupe is how long the same Unconsolidatable message is
// not repeated for a node (Karpenter's 15 minutes).
const unconsolidatableDedupe = 15 * time.Minute

// publishAbout publishes e about the node's NodeClaim and its Node.
func (c *Controller) publishAbout(n *disruption.Node, e events.Event) {
	e.Regarding = n.NodeClaim
	c.opts.Recorder.Publish(e)
	if n.Node != nil {
		e.Regarding = n.Node
		c.opts.Recorder.Publish(e)
	}
}

// reasonsFor are the reasons a method may disrupt n for, from its
// NodeClaim's conditions and its NodePool's policy; empty when no method
// would look at it.
func reasonsFor(n *disruption.Node, empty bool, np *v1.NodePool) []disruption.Reason {
	if np == nil || n.NodeClaim == nil {
		return nil
	}
	var out []disruption.Reason
	conds := n.NodeClaim.StatusConditions()
	if conds.IsTrue(v1.ConditionTypeDrifted) {
		out = append(out, disruption.ReasonDrifted)
	}
	if conds.IsTrue(v1.ConditionTypeConsolidatable) {
		if empty {
			out = append(out, disruption.ReasonEmpty)
		} else if np.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmpty {
			out = append(out, disruption.ReasonUnderutilized)
		}
	}
	return out
}

// decision is Karpenter's decision label: delete or replace.
func decision(cmd *disruption.Command) string {
	if len(cmd.Replacements) == 0 {
		return "delete"
	}
	return "replace"
}

// consolidationType is Karpenter's consolidation_type label.
func consolidationType(m disruption.Method) string {
	switch m {
	case disruption.MethodEmptiness:
		return "empty"
	case disruption.MethodMultiNode:
		return "multi"
	case disruption.MethodSingleNode:
		return "single"
	default:
		return ""
	}
}

// metricReason is a reason as Karpenter's metrics spell it (lower case).
func metricReason(r disruption.Reason) string { return strings.ToLower(string(r)) }

func commandLabels(cmd *disruption.Command) prometheus.Labels {
	return prometheus.Labels{
		labelDecision:          decision(cmd),
		metrics.LabelReason:    metricReason(cmd.Reason),
		labelConsolidationType: consolidationType(cmd.Method),
	}
}

// decisionText is the reason/decision pair events show, e.g.
// "Underutilized/Replace".
func decisionText(cmd *disruption.Command) string {
	d := decision(cmd)
	return string(cmd.Reason) + "/" + strings.ToUpper(d[:1]) + d[1:]
}

// describe is the DisruptionReason condition's message: what the command
// does and what it saves.
func describe(cmd *disruption.Command) string {
	what := fmt.Sprintf("%s: delete %d node(s)", cmd.Method, len(cmd.Candidates))
	if len(cmd.Replacements) > 0 {
		var types []string
		for _, r := range cmd.Replacements {
			if len(r.InstanceTypes) > 0 {
				types = append(types, r.InstanceTypes[0].Name)
			}
		}
		what = fmt.Sprintf("%s: replace %d node(s) with %d new (%s)", cmd.Method, len(cmd.Candidates), len(cmd.Replacements), strings.Join(types, ", "))
	}
	if cmd.SavingsPerHour > 0 {
		what += fmt.Sprintf(", saving $%.4f/h", cmd.SavingsPerHour)
	}
	if cmd.PodsMoved > 0 {
		what += fmt.Sprintf(", moving %d pod(s)", cmd.PodsMoved)
	}
	return what
}
