package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
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

// mirrorPodAnnotation marks static pods: the kubelet owns them and the API
// server cannot evict them.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

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
	// karpenter.sh/do-not-disrupt before the deadline).
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
func planDrain(pods []*corev1.Pod, now, deadline time.Time) drainPlan {
	var plan drainPlan
	var groups [groupCount][]*corev1.Pod
	pastDeadline := !deadline.IsZero() && !now.Before(deadline)
	for _, p := range pods {
		if !needsDrain(p) {
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
		if doNotDisrupt(p) {
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

// needsDrain reports whether p must leave the node before it goes away.
// Finished pods, static pods, and pods that tolerate the disrupted taint
// (they chose to stay until the end, as most node agents do) need not.
func needsDrain(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, ok := p.Annotations[mirrorPodAnnotation]; ok {
		return false
	}
	return !corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &v1.DisruptedNoScheduleTaint, false)
}

func drainGroup(p *corev1.Pod) int {
	critical := p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
	daemon := scheduling.IsOwnedByDaemonSet(p)
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

// doNotDisrupt reports whether the pod asks not to be evicted. Any non-empty
// value other than "false" protects it during a drain; the deadline of
// terminationGracePeriod is what eventually overrides it.
func doNotDisrupt(p *corev1.Pod) bool {
	v, ok := p.Annotations[v1.AnnotationDoNotDisrupt]
	return ok && v != "" && v != "false"
}

func podGrace(p *corev1.Pod) int64 {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return *p.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}
