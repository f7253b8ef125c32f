package disruption

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// podDeletionCostAnnotation is the ReplicaSet controller's hint of how much
// a pod would rather stay; Karpenter reads it into the eviction cost.
const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// isDaemonSetPod reports whether a DaemonSet controls p: the DaemonSet
// controller, not the autoscaler, places such pods.
func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// isMirrorPod reports whether p is a static pod's mirror: the kubelet owns
// it and the API cannot evict it.
func isMirrorPod(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "Node" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// isActive reports whether p still runs: not finished and not already being
// deleted.
func isActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// isReschedulable reports whether p must find another node when its node
// goes: an active pod that neither a DaemonSet nor the kubelet places, or a
// terminating StatefulSet pod (its replacement waits for it, so Karpenter
// plans room for it).
func isReschedulable(p *corev1.Pod) bool {
	return (isActive(p) || (p.DeletionTimestamp != nil && ownedBy(p, "StatefulSet"))) && !isDaemonSetPod(p) && !isMirrorPod(p)
}

func ownedBy(p *corev1.Pod, kind string) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

// toleratesDisrupted reports whether p tolerates the karpenter.sh/disrupted
// NoSchedule taint: the drain leaves such pods where they are.
func toleratesDisrupted(p *corev1.Pod) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &v1.DisruptedNoScheduleTaint, false)
}

// doNotDisrupt reports whether an active pod's karpenter.sh/do-not-disrupt
// annotation forbids disruption at now: "true" always; a duration while the
// pod is younger than it. Any other value blocks too, so a typo fails safe.
// Daemon and mirror pods count: users put the annotation on them to pin a
// node.
func doNotDisrupt(p *corev1.Pod, now time.Time) bool {
	v, ok := p.Annotations[v1.AnnotationDoNotDisrupt]
	if !ok || !isActive(p) {
		return false
	}
	if v == "true" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return true
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	return now.Before(start.Add(d))
}

// evictionCost is Karpenter's cost of evicting one pod: 1, plus the pod
// deletion cost / 2^27, plus the priority / 2^25, clamped to [-10, 10], so
// that important pods weigh more without one pod dwarfing a node.
func evictionCost(p *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := p.Annotations[podDeletionCostAnnotation]; ok {
		if c, err := strconv.ParseFloat(v, 64); err == nil {
			cost += c / math.Exp2(27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Exp2(25)
	}
	return min(max(cost, -10), 10)
}

// lifetimeRemaining is the share of the NodeClaim's expireAfter still ahead
// of it (1 when it never expires): a node about to expire is cheap to
// disrupt, as its pods move soon anyway.
func lifetimeRemaining(nc *v1.NodeClaim, now time.Time) float64 {
	if nc == nil || nc.Spec.ExpireAfter.Duration == nil || *nc.Spec.ExpireAfter.Duration <= 0 {
		return 1
	}
	life := *nc.Spec.ExpireAfter.Duration
	left := nc.CreationTimestamp.Add(life).Sub(now)
	return min(max(float64(left)/float64(life), 0), 1)
}

// podKey is namespace/name as Karpenter's messages print it.
func podKey(p *corev1.Pod) string { return klog.KObj(p).String() }
