package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// Drain groups, in the order pods leave a node. A group is evicted only once
// every earlier group is gone, so workloads move before the daemons that
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
func planDrain(onNode []*corev1.Pod, now, deadline time.Time) drainPlan {
	var plan drainPlan
	var groups [groupCount][]*corev1.Pod
	pastDeadline := !deadline.IsZero() && !now.Before(deadline)
	for _, p := range onNode {
		if !pods.NeedsDrain(p) {
			continue
		}
		if !deadline.IsZero() && p.DeletionTimestamp == nil {
			// Delete early enough that the pod's own grace period ends by
			// the deadline: past that point an eviction could not finish in
			// time, and terminationGracePeriod overrides PDBs.
			if grace := podGrace(p); pastDeadline || !now.Add(time.Duration(grace)*time.Second).Before(deadline) {
				remaining := int64(deadline.Sub(now) / time.Second)
				if remaining < 0 {
					remaining = 0
				}
				plan.Delete = append(plan.Delete, p)
				plan.DeleteGrace = append(plan.DeleteGrace, min(grace, remaining))
				continue
			}
		}
		if p.DeletionTimestamp != nil {
			if now.Sub(p.DeletionTimestamp.Time) < stuckTerminatingAfter {
				plan.Waiting++
			}
			continue
		}
		if pods.DoNotDisrupt(p, now) {
			plan.Protected = append(plan.Protected, p)
			plan.Waiting++
			continue
		}
		g := drainGroup(p)
		groups[g] = append(groups[g], p)
	}
	for g := range groups {
		if len(groups[g]) == 0 {
			continue
		}
		plan.Evict = groups[g]
		for _, later := range groups[g+1:] {
			plan.Waiting += len(later)
		}
		break
	}
	return plan
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
