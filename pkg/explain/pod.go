package explain

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/simulate"
)

// PodVerdict is why a pod runs where it runs, or why it is still pending.
type PodVerdict struct {
	Pod string `json:"pod"`
	// Node is the node the pod is bound to, "" while pending.
	Node string `json:"node,omitempty"`
	// Rejections are the NodePools (and existing nodes, under
	// simulate.ExistingNodesKey) that cannot take the pod, each with the
	// solver's typed reason; sorted, existing nodes last.
	Rejections []Rejection `json:"rejections,omitempty"`
	// NewNode is the node joiner would launch for the pod now.
	NewNode *simulate.Node `json:"newNode,omitempty"`
	// ExistingNode is the existing node or in-flight NodeClaim the solver
	// places the pod on.
	ExistingNode string `json:"existingNode,omitempty"`
	// WaitingFor is that NodeClaim's verdict when it is not initialised
	// yet: the pod waits for it.
	WaitingFor *NodeClaimVerdict `json:"waitingFor,omitempty"`
	// Fixes say what would let the pod schedule, one per kind of
	// rejection.
	Fixes []string `json:"fixes,omitempty"`
	// Events are the latest events about the pod.
	Events []EventSummary `json:"events,omitempty"`
	Notes  []string       `json:"notes,omitempty"`
	// InstanceTypeSource says where the instance types and offerings the
	// verdict was solved with come from (Snapshot.InstanceTypeSource).
	InstanceTypeSource string `json:"instanceTypeSource,omitempty"`
	Summary            string `json:"summary"`
}

// Rejection is one place that cannot take the pod and why.
type Rejection struct {
	// Where is a NodePool name, or simulate.ExistingNodesKey.
	Where string `json:"where"`
	simulate.Rejection
	// Shortfalls say, when the pool's instance types are too small, how
	// many of them lack each resource and the most the largest offers.
	Shortfalls []string `json:"shortfalls,omitempty"`
}

// Solver solves a snapshot; scheduling.Solve with default options when
// nil.
type Solver = simulate.Solver

// Pod explains the pod namespace/name. It re-runs the solver on the
// snapshot (as `joiner simulate` does) to learn what each NodePool says
// about the pod now.
func Pod(s *Snapshot, namespace, name string, solve Solver, opts Options) (*PodVerdict, error) {
	var pod *corev1.Pod
	for _, p := range s.Pods {
		if p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	key := namespace + "/" + name
	v := &PodVerdict{Pod: key, Node: pod.Spec.NodeName}
	v.Events = s.eventsAbout(s.Now, ref{"Pod", namespace, name})
	switch {
	case pod.Spec.NodeName != "":
		v.Summary = fmt.Sprintf("Pod %s is bound to node %s.", key, pod.Spec.NodeName)
		return v, nil
	case pods.IsTerminal(pod):
		v.Summary = fmt.Sprintf("Pod %s has finished (%s); joiner provisions nothing for it.", key, pod.Status.Phase)
		return v, nil
	case pods.IsOwnedByDaemonSet(pod):
		v.Summary = fmt.Sprintf("Pod %s belongs to a DaemonSet: the DaemonSet controller places it on each node it selects; joiner launches no node for it, it counts it as overhead on every new node.", key)
		return v, nil
	}
	if solve == nil {
		solve = func(snap *scheduling.Snapshot) (*scheduling.Plan, error) {
			return scheduling.Solve(snap, scheduling.Options{})
		}
	}
	report, err := simulate.Run(s.Scheduling, simulate.Options{Solve: solve, Clock: clocktesting.NewFakePassiveClock(s.Now)})
	if err != nil {
		return nil, err
	}
	for _, u := range report.Unschedulable {
		if u.Pod != key {
			continue
		}
		for where, r := range u.Reasons {
			rej := Rejection{Where: where, Rejection: r}
			if r.Kind == scheduling.KindInsufficientResource || r.Kind == scheduling.KindNoInstanceType {
				rej.Shortfalls = shortfalls(s, where, pod)
			}
			v.Rejections = append(v.Rejections, rej)
		}
	}
	sort.Slice(v.Rejections, func(i, j int) bool {
		a, b := v.Rejections[i].Where, v.Rejections[j].Where
		if (a == simulate.ExistingNodesKey) != (b == simulate.ExistingNodesKey) {
			return b == simulate.ExistingNodesKey
		}
		return a < b
	})
	for i := range report.Nodes {
		if slices.Contains(report.Nodes[i].Pods, key) {
			v.NewNode = &report.Nodes[i]
		}
	}
	for _, e := range report.Existing {
		if slices.Contains(e.Pods, key) {
			v.ExistingNode = e.Node
		}
	}
	if v.ExistingNode != "" {
		for _, n := range s.Scheduling.Nodes {
			if n.Name == v.ExistingNode && n.NodeClaim != "" && !n.Initialized {
				if nc := s.nodeClaim(n.NodeClaim); nc != nil {
					v.WaitingFor = claimVerdict(s, nc, s.nodeOf(nc), opts.withView(s.View))
				}
			}
		}
	}
	v.Fixes = fixes(v.Rejections)
	v.InstanceTypeSource = s.InstanceTypeSource
	v.Notes = s.Notes
	v.Summary = podSummary(v, len(s.Scheduling.NodePools))
	return v, nil
}

func podSummary(v *PodVerdict, pools int) string {
	switch {
	case v.WaitingFor != nil:
		return fmt.Sprintf("Pod %s is pending, waiting for NodeClaim %s (%s). %s", v.Pod, v.WaitingFor.NodeClaim, v.WaitingFor.Phase, v.WaitingFor.Summary)
	case v.ExistingNode != "":
		return fmt.Sprintf("Pod %s is pending but fits on existing node %s: the kube-scheduler should bind it (see its FailedScheduling events if it does not).", v.Pod, v.ExistingNode)
	case v.NewNode != nil:
		types := v.NewNode.InstanceTypes[:min(len(v.NewNode.InstanceTypes), 3)]
		return fmt.Sprintf("Pod %s is pending; joiner would launch a node for it in NodePool %s (%s, $%.4f/h). If none appears, see the NodePool's and the pod's events.",
			v.Pod, v.NewNode.NodePool, strings.Join(types, ", "), v.NewNode.Price)
	case len(v.Rejections) > 0:
		n := 0
		for _, r := range v.Rejections {
			if r.Where != simulate.ExistingNodesKey {
				n++
			}
		}
		if pools == 0 {
			return fmt.Sprintf("Pod %s cannot be scheduled: there is no NodePool, so joiner can launch nothing for it.", v.Pod)
		}
		return fmt.Sprintf("Pod %s cannot be scheduled: %d of %d NodePools reject it and no existing node fits.", v.Pod, n, pools)
	default:
		return fmt.Sprintf("Pod %s is pending but joiner's solver does not consider it (for example a pod another scheduler places).", v.Pod)
	}
}

// shortfalls compares the pod's requests with the allocatable of the
// instance types pool's requirements keep: "412 instance types lack 64
// cpu; the largest has 48" (DaemonSet overhead not counted).
func shortfalls(s *Snapshot, pool string, pod *corev1.Pod) []string {
	var np *scheduling.NodePool
	for _, p := range s.Scheduling.NodePools {
		if p.Name == pool {
			np = p
		}
	}
	if np == nil {
		return nil
	}
	var kept []*scheduling.InstanceType
	for _, it := range s.Scheduling.InstanceTypes[pool] {
		if typeAllowed(np, it) {
			kept = append(kept, it)
		}
	}
	requests := pods.Requests(pod)
	var out []string
	for _, name := range sortedNames(requests) {
		want := requests[name]
		lacking := 0
		var largest resource.Quantity
		for _, it := range kept {
			have := it.Allocatable()[name]
			if have.Cmp(want) < 0 {
				lacking++
			}
			if have.Cmp(largest) > 0 {
				largest = have
			}
		}
		// Only what no type has: a resource some types have is not why
		// the pool is rejected.
		if lacking > 0 && lacking == len(kept) {
			out = append(out, fmt.Sprintf("%d instance types lack %s %s; the largest allowed has %s", lacking, want.String(), name, quantityText(name, largest)))
		}
	}
	return out
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for k := range rl {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// quantityText is q for people: cpu in cores, memory in GiB.
func quantityText(name corev1.ResourceName, q resource.Quantity) string {
	switch name {
	case corev1.ResourceCPU:
		return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return strconv.FormatFloat(float64(q.Value()>>20)/1024, 'f', 1, 64) + "Gi"
	}
	return q.String()
}
