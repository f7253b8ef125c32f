package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// story prints what happens in the cluster as it happens: one line per
// transition, with the time since the clock was started.
type story struct {
	out io.Writer

	mu       sync.Mutex
	start    time.Time
	claims   map[string]*claimSeen
	nodes    map[string]*nodeSeen
	lastPods string
}

// claimSeen is which transitions of a NodeClaim were printed.
type claimSeen struct {
	launched, launchFailed, registered, initialized, deleting bool
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
	return &story{out: out, claims: map[string]*claimSeen{}, nodes: map[string]*nodeSeen{}, lastPods: "none"}
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
	fmt.Fprintf(s.out, prefix+format+"\n", args...)
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
		pods   corev1.PodList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
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
	s.mu.Lock()
	defer s.mu.Unlock()
	obs := &observation{claims: len(claims.Items), nodes: len(nodes.Items)}
	s.observePods(pods.Items, obs)
	s.observeClaims(claims.Items, obs)
	s.observeNodes(nodes.Items)
	return obs, nil
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

func (s *story) observeClaims(claims []v1.NodeClaim, obs *observation) {
	present := map[string]bool{}
	for i := range claims {
		nc := &claims[i]
		present[nc.Name] = true
		seen, ok := s.claims[nc.Name]
		if !ok {
			seen = &claimSeen{}
			s.claims[nc.Name] = seen
			s.printf("nodeclaim  %s created for nodepool %s (requests %s; %d instance type option(s))",
				nc.Name, nc.Labels[v1.LabelNodePool], requestsOf(nc), instanceTypeOptions(nc))
		}
		launched := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeLaunched)
		if !seen.launched && (nc.Status.ProviderID != "" || (launched != nil && launched.Status == "True")) {
			seen.launched = true
			s.printf("nodeclaim  %s launched: %s %s in %s (%s)", nc.Name,
				nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelCapacityType], nc.Labels[v1.LabelTopologyZone], nc.Status.ProviderID)
		}
		if !seen.launchFailed && !seen.launched && launched != nil && launched.Status == "False" {
			seen.launchFailed = true
			s.printf("nodeclaim  %s launch failed: %s: %s", nc.Name, launched.Reason, launched.Message)
		}
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeRegistered); !seen.registered && c != nil && c.Status == "True" {
			seen.registered = true
			s.printf("nodeclaim  %s registered: node %s joined", nc.Name, nc.Status.NodeName)
		}
		if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized); c != nil && c.Status == "True" {
			obs.initialized++
			if !seen.initialized {
				seen.initialized = true
				s.printf("nodeclaim  %s initialized: node %s ready for pods", nc.Name, nc.Status.NodeName)
			}
		}
		if !seen.deleting && nc.DeletionTimestamp != nil {
			seen.deleting = true
			s.printf("nodeclaim  %s deleting: draining and terminating its instance", nc.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.claims)) {
		if !present[name] {
			s.printf("nodeclaim  %s gone: instance terminated", name)
			delete(s.claims, name)
		}
	}
}

func (s *story) observeNodes(nodes []corev1.Node) {
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
			s.printf("node       %s cordoned (%s) and draining", n.Name, v1.TaintKeyDisrupted)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		if !present[name] {
			s.printf("node       %s deleted", name)
			delete(s.nodes, name)
		}
	}
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
