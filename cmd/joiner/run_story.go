package main

import (
	"context"
	"fmt"
	"io"
	"k8s.io/utils/clock"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/launchhealth"
)

// story prints what happens in the cluster as it happens: one line per
// transition, with the time since the clock was started.
type story struct {
	out io.Writer
	// clock is the real clock; tests stop it.
	clock clock.PassiveClock

	mu       sync.Mutex
	start    time.Time
	claims   map[string]*claimSeen
	nodes    map[string]*nodeSeen
	lastPods string
	// pools is the launch health last printed per NodePool.
	pools map[string]string
}

// claimSeen is which transitions of a NodeClaim were printed.
type claimSeen struct {
	launched, launchFailed, registered, initialized, disrupting, deleting bool
}

type nodeSeen struct {
	draining bool
}

// observation is the counts of one look at the cluster.
type observation struct {
	pods, running, pending int
	claims                 int
	initialized            int
	nodes                  int
}

func newStory(out io.Writer) *story {
	return &story{out: out, clock: clock.RealClock{}, claims: map[string]*claimSeen{}, nodes: map[string]*nodeSeen{}, pools: map[string]string{}, lastPods: "none"}
}

// startClock makes later lines carry the time since now.
func (s *story) startClock() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = time.Now()
}

func (s *story) sayf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.printf(format, args...)
}

// printf prints one line; s.mu must be held.
func (s *story) printf(format string, args ...any) {
	prefix := "          "
	if !s.start.IsZero() {
		prefix = fmt.Sprintf("[%6.1fs] ", time.Since(s.start).Seconds())
	}
	// The story is a demo's narration on the terminal: a line that cannot
	// be written is lost and joiner goes on with the demo.
	_, _ = fmt.Fprintf(s.out, prefix+format+"\n", args...)
}

// watch observes the cluster until ctx ends.
func (s *story) watch(ctx context.Context, c client.Client) {
	for {
		_, _ = s.observe(ctx, c)
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// observe looks at the demo's pods, every NodeClaim and every joiner Node,
// prints what changed since the last look and returns the counts.
func (s *story) observe(ctx context.Context, c client.Client) (*observation, error) {
	var (
		pods      corev1.PodList
		claims    v1.NodeClaimList
		nodes     corev1.NodeList
		nodePools v1.NodePoolList
	)
	if err := c.List(ctx, &pods, client.InNamespace(demoNamespace), client.MatchingLabels{"app": demoName}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	if err := c.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	if err := c.List(ctx, &nodes, client.HasLabels{v1.LabelNodePool}); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if err := c.List(ctx, &nodePools); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	obs := &observation{claims: len(claims.Items), nodes: len(nodes.Items)}
	s.observePods(pods.Items, obs)
	s.observeClaims(claims.Items, obs)
	s.observeNodes(nodes.Items)
	s.observeNodePools(nodePools.Items)
	return obs, nil
}

func failedTo(p launchhealth.Phase) string {
	if p == launchhealth.PhaseInitialization {
		return "initialize"
	}
	return "register"
}

// observeNodePools prints a NodePool whose launches fail: its
// NodeRegistrationHealthy condition once False (and when it recovers) and
// each new back-off. A healthy NodePool prints nothing.
func (s *story) observeNodePools(nodePools []v1.NodePool) {
	for i := range nodePools {
		np := &nodePools[i]
		c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionTypeNodeRegistrationHealthy)
		record, _ := launchhealth.Get(np)
		state := ""
		if c != nil && c.Status == metav1.ConditionFalse {
			state = c.Reason
		}
		now := s.clock.Now()
		active := record.Active(now, np.Hash())
		for _, b := range active {
			state += fmt.Sprintf(" %s×%d", b.What(), b.Failures)
		}
		last, seen := s.pools[np.Name]
		if state == last || (!seen && state == "") {
			continue
		}
		s.pools[np.Name] = state
		switch {
		case state == "":
			s.printf("nodepool   %s NodeRegistrationHealthy again; no launch backing off", np.Name)
		case len(active) > 0:
			b := active[0]
			s.printf("nodepool   %s backing off: %s failed to %s %d time(s) in a row (%s); next attempt in %s, at %s. Pods that another NodePool can serve go there meanwhile",
				np.Name, b.What(), failedTo(b.Phase), b.Failures, b.Reason, b.RetryAfter.Sub(now).Round(time.Second), b.RetryAfter.Format(time.TimeOnly))
		default:
			s.printf("nodepool   %s NodeRegistrationHealthy=False (%s)", np.Name, c.Reason)
		}
	}
}

func (s *story) observePods(pods []corev1.Pod, obs *observation) {
	counts := map[string]int{}
	for i := range pods {
		p := &pods[i]
		obs.pods++
		switch {
		case p.DeletionTimestamp != nil:
			counts["terminating"]++
		case p.Status.Phase == corev1.PodRunning:
			counts["running"]++
			obs.running++
		case p.Spec.NodeName != "":
			counts["starting"]++
		case isUnschedulable(p):
			counts["pending (unschedulable)"]++
			obs.pending++
		default:
			counts["pending"]++
			obs.pending++
		}
	}
	var parts []string
	for _, state := range []string{"pending (unschedulable)", "pending", "starting", "running", "terminating"} {
		if n := counts[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	summary := "none"
	if len(parts) > 0 {
		summary = strings.Join(parts, ", ")
	}
	if summary != s.lastPods {
		s.printf("pods       %s", summary)
		s.lastPods = summary
	}
}

func isUnschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// transitions collects what changed in one look, so that many NodeClaims
// doing the same thing at once make one line, not one each.
type transitions struct {
	order  []string
	claims map[string][]*v1.NodeClaim
	nodes  map[string][]string
}

func (t *transitions) addClaim(kind string, nc *v1.NodeClaim) {
	if t.claims == nil {
		t.claims = map[string][]*v1.NodeClaim{}
	}
	if _, ok := t.claims[kind]; !ok {
		t.order = append(t.order, kind)
	}
	t.claims[kind] = append(t.claims[kind], nc)
}

func (t *transitions) addNode(kind, name string) {
	if t.nodes == nil {
		t.nodes = map[string][]string{}
	}
	if _, ok := t.nodes[kind]; !ok {
		t.order = append(t.order, kind)
	}
	t.nodes[kind] = append(t.nodes[kind], name)
}

// NodeClaim and Node transitions, in the order they are printed.
const (
	claimCreated      = "created"
	claimLaunched     = "launched"
	claimLaunchFailed = "launch failed"
	claimRegistered   = "registered"
	claimInitialized  = "initialized"
	claimDisrupting   = "disrupting"
	claimDeleting     = "deleting"
	claimGone         = "gone"
	nodeDraining      = "node draining"
	nodeDeleted       = "node deleted"
)

func (s *story) observeClaims(claims []v1.NodeClaim, obs *observation) {
	var tr transitions
	present := map[string]bool{}
	for i := range claims {
		nc := &claims[i]
		present[nc.Name] = true
		seen, ok := s.claims[nc.Name]
		if !ok {
			seen = &claimSeen{}
			s.claims[nc.Name] = seen
			tr.addClaim(claimCreated, nc)
		}
		launched := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeLaunched)
		if !seen.launched && (nc.Status.ProviderID != "" || (launched != nil && launched.Status == "True")) {
			seen.launched = true
			tr.addClaim(claimLaunched, nc)
		}
		if !seen.launchFailed && !seen.launched && launched != nil && launched.Status == "False" {
			seen.launchFailed = true
			tr.addClaim(claimLaunchFailed, nc)
		}
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeRegistered); !seen.registered && c != nil && c.Status == "True" {
			seen.registered = true
			tr.addClaim(claimRegistered, nc)
		}
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized); c != nil && c.Status == "True" {
			obs.initialized++
			if !seen.initialized {
				seen.initialized = true
				tr.addClaim(claimInitialized, nc)
			}
		}
		reason := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
		if !seen.disrupting && !seen.deleting && nc.DeletionTimestamp == nil && reason != nil && reason.Status == "True" {
			seen.disrupting = true
			tr.addClaim(claimDisrupting, nc)
		}
		if !seen.deleting && nc.DeletionTimestamp != nil {
			seen.deleting = true
			tr.addClaim(claimDeleting, nc)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.claims)) {
		if !present[name] {
			tr.addClaim(claimGone, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
			delete(s.claims, name)
		}
	}
	s.printTransitions(&tr)
}

// printTransitions prints one line per kind of transition: the NodeClaim's
// details when one changed, a summary when several did.
func (s *story) printTransitions(tr *transitions) {
	for _, kind := range tr.order {
		if names, ok := tr.nodes[kind]; ok {
			subject := "node       " + names[0]
			if len(names) > 1 {
				subject = fmt.Sprintf("nodes      %d", len(names))
			}
			switch kind {
			case nodeDraining:
				s.printf("%s cordoned (%s) and draining", subject, v1.TaintKeyDisrupted)
			case nodeDeleted:
				s.printf("%s deleted", subject)
			}
			continue
		}
		ncs := tr.claims[kind]
		nc := ncs[0]
		if kind == claimDeleting || kind == claimDisrupting {
			// One line per disruption reason joiner recorded, so nodes
			// going for different reasons say so separately.
			for _, group := range byDisruption(ncs) {
				if len(group) == 1 {
					s.printf("nodeclaim  %s %s", group[0].Name, describeClaim(kind, group[0]))
				} else {
					s.printf("nodeclaims %d %s", len(group), describeClaims(kind, group, group[0]))
				}
			}
			continue
		}
		if len(ncs) == 1 || kind == claimLaunchFailed {
			for _, nc := range ncs {
				s.printf("nodeclaim  %s %s", nc.Name, describeClaim(kind, nc))
			}
			continue
		}
		s.printf("nodeclaims %d %s", len(ncs), describeClaims(kind, ncs, nc))
	}
}

func describeClaim(kind string, nc *v1.NodeClaim) string {
	switch kind {
	case claimCreated:
		return fmt.Sprintf("created for nodepool %s (requests %s; %d instance type option(s))", nc.Labels[v1.LabelNodePool], requestsOf(nc), instanceTypeOptions(nc))
	case claimLaunched:
		return fmt.Sprintf("launched: %s (%s)", shapeOf(nc), nc.Status.ProviderID)
	case claimLaunchFailed:
		c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeLaunched)
		return fmt.Sprintf("launch failed: %s: %s", c.Reason, c.Message)
	case claimRegistered:
		return fmt.Sprintf("registered: node %s joined", nc.Status.NodeName)
	case claimInitialized:
		return fmt.Sprintf("initialized: node %s ready for pods", nc.Status.NodeName)
	case claimDisrupting:
		return fmt.Sprintf("disrupting (%s): node tainted %s", disruptionOf(nc), v1.TaintKeyDisrupted)
	case claimDeleting:
		if why := disruptionOf(nc); why != "" {
			return fmt.Sprintf("deleting (%s): draining and terminating its instance", why)
		}
		return "deleting: draining and terminating its instance"
	default:
		return "gone: instance terminated"
	}
}

// disruptionOf is the reason joiner recorded on a NodeClaim it disrupts
// (the DisruptionReason condition), e.g. "reason Empty: emptiness: delete
// 2 node(s)", or "" when joiner is not disrupting it.
func disruptionOf(nc *v1.NodeClaim) string {
	c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != "True" {
		return ""
	}
	if c.Message == "" {
		return "reason " + c.Reason
	}
	return fmt.Sprintf("reason %s: %s", c.Reason, c.Message)
}

// byDisruption groups NodeClaims by their recorded disruption, in first
// appearance order.
func byDisruption(ncs []*v1.NodeClaim) [][]*v1.NodeClaim {
	var (
		order  []string
		groups = map[string][]*v1.NodeClaim{}
	)
	for _, nc := range ncs {
		key := disruptionOf(nc)
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], nc)
	}
	out := make([][]*v1.NodeClaim, 0, len(order))
	for _, key := range order {
		out = append(out, groups[key])
	}
	return out
}

func describeClaims(kind string, ncs []*v1.NodeClaim, first *v1.NodeClaim) string {
	switch kind {
	case claimCreated:
		return fmt.Sprintf("created for nodepool %s (e.g. %s: requests %s; %d instance type option(s))", first.Labels[v1.LabelNodePool], first.Name, requestsOf(first), instanceTypeOptions(first))
	case claimLaunched:
		shapes := map[string]int{}
		for _, nc := range ncs {
			shapes[shapeOf(nc)]++
		}
		var parts []string
		for _, shape := range slices.Sorted(maps.Keys(shapes)) {
			parts = append(parts, fmt.Sprintf("%d× %s", shapes[shape], shape))
		}
		return "launched: " + strings.Join(parts, ", ")
	case claimRegistered:
		return "registered: their nodes joined"
	case claimInitialized:
		return "initialized: their nodes are ready for pods"
	case claimDisrupting:
		return fmt.Sprintf("disrupting (%s): nodes tainted %s", disruptionOf(first), v1.TaintKeyDisrupted)
	case claimDeleting:
		if why := disruptionOf(first); why != "" {
			return fmt.Sprintf("deleting (%s): draining and terminating their instances", why)
		}
		return "deleting: draining and terminating their instances"
	default:
		return "gone: instances terminated"
	}
}

// shapeOf is "type capacity-type in zone".
func shapeOf(nc *v1.NodeClaim) string {
	return fmt.Sprintf("%s %s in %s", nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelCapacityType], nc.Labels[v1.LabelTopologyZone])
}

func (s *story) observeNodes(nodes []corev1.Node) {
	var tr transitions
	present := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		present[n.Name] = true
		seen, ok := s.nodes[n.Name]
		if !ok {
			seen = &nodeSeen{}
			s.nodes[n.Name] = seen
		}
		if !seen.draining && (n.DeletionTimestamp != nil || hasTaint(n, v1.TaintKeyDisrupted)) {
			seen.draining = true
			tr.addNode(nodeDraining, n.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		if !present[name] {
			tr.addNode(nodeDeleted, name)
			delete(s.nodes, name)
		}
	}
	s.printTransitions(&tr)
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func requestsOf(nc *v1.NodeClaim) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if q, ok := nc.Spec.Resources.Requests[name]; ok {
			parts = append(parts, string(name)+"="+q.String())
		}
	}
	return strings.Join(parts, " ")
}

func instanceTypeOptions(nc *v1.NodeClaim) int {
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			return len(r.Values)
		}
	}
	return 0
}
