package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// Drain groups, in the order pods leave a node. A group is evicted only once
// every earlier group is gone (terminated, not merely evicted), so workloads move before the daemons that
// serve them (log shippers, CNI, CSI), and system-critical pods go last.
const (
	groupWorkload = iota
	groupDaemon
	groupCritical
	groupCriticalDaemon
	groupCount
)

// stuckTerminatingAfter is how long past its deletion deadline a pod may
// linger before the drain stops waiting for it: a pod whose kubelet is gone
// (instance terminated under it) is never confirmed deleted, and waiting
// for it would keep the node forever.
const stuckTerminatingAfter = time.Minute

// drainPlan is what to do about the pods on a node right now.
type drainPlan struct {
	// Evict are the pods of the first non-empty group that are not yet
	// terminating: they get an eviction request now.
	Evict []*corev1.Pod
	// Delete are pods to delete outright because the termination deadline
	// leaves no time for a graceful eviction; DeleteGrace[i] is the grace
	// period that makes Delete[i] end at the deadline.
	Delete      []*corev1.Pod
	DeleteGrace []int64
	// Waiting counts pods that still block the drain (terminating, or not
	// yet evictable because an earlier group remains, or protected by
	// karpenter.sh/do-not-disrupt before the deadline and, for a duration,
	// before it runs out).
	Waiting int
	// Protected are pods held back by karpenter.sh/do-not-disrupt; they are
	// reported so the user knows what blocks the node.
	Protected []*corev1.Pod
}

// Done reports whether the node is drained.
func (p drainPlan) Done() bool {
	return len(p.Evict) == 0 && len(p.Delete) == 0 && p.Waiting == 0
}

// planDrain decides, from the pods on a node, which to evict or delete now.
// deadline is the zero time when the NodeClaim has no terminationGracePeriod.
// It is pure so the ordering rules are table-tested without an API server.
//
// A group holds every later group while any of its pods is still on the
// node: not yet evicted, terminating (its preStop hook and grace period
// running), or protected by karpenter.sh/do-not-disrupt. Only a pod stuck
// terminating past stuckTerminatingAfter stops counting.
func planDrain(onNode []*corev1.Pod, now, deadline time.Time) drainPlan {
	var plan drainPlan
	// evictable are a group's pods to evict once the group's turn comes;
	// held counts its pods that stay on the node for now (terminating,
	// protected, or being deleted for the deadline).
	var evictable [groupCount][]*corev1.Pod
	var held, deleting [groupCount]int
	for _, p := range onNode {
		if !pods.NeedsDrain(p) || stuckTerminating(p, now) {
			continue
		}
		g := drainGroup(p)
		if grace, ok := deleteForDeadline(p, now, deadline); ok {
			plan.Delete = append(plan.Delete, p)
			plan.DeleteGrace = append(plan.DeleteGrace, grace)
			deleting[g]++
			continue
		}
		switch {
		case p.DeletionTimestamp != nil:
			held[g]++
		case pods.DoNotDisrupt(p, now):
			plan.Protected = append(plan.Protected, p)
			held[g]++
		default:
			evictable[g] = append(evictable[g], p)
		}
	}
	first := groupCount
	for g := range groupCount {
		if len(evictable[g])+held[g]+deleting[g] > 0 {
			first = g
			break
		}
	}
	if first == groupCount {
		return plan
	}
	plan.Evict = evictable[first]
	plan.Waiting = held[first]
	for g := first + 1; g < groupCount; g++ {
		plan.Waiting += len(evictable[g]) + held[g]
	}
	return plan
}

// stuckTerminating reports whether p has been terminating so long past its
// deletion deadline that its kubelet is presumed gone.
func stuckTerminating(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) >= stuckTerminatingAfter
}

// deleteForDeadline reports whether p must be deleted now, and with what
// grace, so that it is gone by the node's terminationGracePeriod deadline:
// past that point an eviction could not finish in time, and the deadline
// overrides PDBs and do-not-disrupt. A pod already terminating is deleted
// again only when its own deletion would end after the deadline. The grace
// is at least one second: zero would remove the pod from the API before its
// kubelet stopped it, and two copies of it could run at once.
func deleteForDeadline(p *corev1.Pod, now, deadline time.Time) (int64, bool) {
	if deadline.IsZero() {
		return 0, false
	}
	remaining := max(int64(deadline.Sub(now)/time.Second), 1)
	if p.DeletionTimestamp != nil {
		if p.DeletionTimestamp.After(deadline) {
			return remaining, true
		}
		return 0, false
	}
	grace := podGrace(p)
	if !now.Before(deadline) || !now.Add(time.Duration(grace)*time.Second).Before(deadline) {
		return max(min(grace, remaining), 1), true
	}
	return 0, false
}

func drainGroup(p *corev1.Pod) int {
	critical := p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
	daemon := pods.IsOwnedByDaemonSet(p)
	switch {
	case critical && daemon:
		return groupCriticalDaemon
	case critical:
		return groupCritical
	case daemon:
		return groupDaemon
	default:
		return groupWorkload
	}
}

func podGrace(p *corev1.Pod) int64 {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return *p.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}
