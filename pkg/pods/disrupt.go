package pods

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// DoNotDisrupt reports whether p's karpenter.sh/do-not-disrupt annotation
// protects it at now, with Karpenter's semantics:
//   - "true" protects an active pod indefinitely (only a NodeClaim's
//     terminationGracePeriod ends the protection, in the drain);
//   - a Go duration such as "1m" or "2h" protects it for that long after it
//     started (status.startTime, or its creation when it has not started);
//     after that it may be disrupted and drained like any other pod;
//   - "false", "" or no annotation: no protection.
//
// Any other value (a typo such as "yes" or "1 m") protects it too, so a
// mistake fails safe. Finished and terminating pods are never protected:
// they are leaving anyway. Daemon and mirror pods count: users put the
// annotation on them to pin a node.
//
// This is the one reading of the annotation: the disruption engine, the
// drain and explain all ask it.
func DoNotDisrupt(p *corev1.Pod, now time.Time) bool {
	until, ok := doNotDisruptUntil(p)
	if !ok || !IsActive(p) {
		return false
	}
	return until.IsZero() || now.Before(until)
}

// doNotDisruptUntil is when p's do-not-disrupt protection ends: the zero
// time when it is indefinite, false when the pod carries no protection.
func doNotDisruptUntil(p *corev1.Pod) (time.Time, bool) {
	v, ok := p.Annotations[v1.AnnotationDoNotDisrupt]
	if !ok || v == "" || v == "false" {
		return time.Time{}, false
	}
	if v == "true" {
		return time.Time{}, true
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return time.Time{}, true
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	return start.Add(d), true
}

// IsEvictable reports whether a drain at now would send p an eviction (so
// its PodDisruptionBudgets apply), in Karpenter's meaning: an active pod
// that is not a mirror pod, does not tolerate the disrupted taint, and is
// not protected by karpenter.sh/do-not-disrupt.
func IsEvictable(p *corev1.Pod, now time.Time) bool {
	return IsActive(p) && NeedsDrain(p) && !DoNotDisrupt(p, now)
}
