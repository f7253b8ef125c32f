package capacitybuffer

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// Count is how many chunks a buffer plans, and why it is fewer than asked.
type Count struct {
	// Chunks is the number of virtual pods to plan.
	Chunks int32
	// Quota says which ResourceQuotas cut Chunks below what the spec asks,
	// "" when none did (the LimitedByQuotas condition's message).
	Quota string
	// Limits says that spec.limits cut Chunks below the replicas or
	// percentage asked, "" when they did not.
	Limits string
}

// Chunks computes a buffer's chunk count as Karpenter and Cluster
// Autoscaler do: the larger of replicas and percentage (of the scalableRef's
// replicas, rounded up, at least one when both are positive), capped by
// limits (floor(limit / request) for every resource both name); with
// neither replicas nor percentage, as many chunks as limits admit. The
// namespace's ResourceQuotas then cap the result as if the chunks were
// pods of the namespace (hard minus used, for cpu, memory and pod count).
// workloadReplicas is nil for a podTemplateRef buffer.
func Chunks(spec *autoscalingv1beta1.CapacityBufferSpec, chunk *corev1.Pod, workloadReplicas *int32, quotas []corev1.ResourceQuota) Count {
	requests := pods.Requests(chunk)
	var candidates []int32
	if spec.Replicas != nil {
		candidates = append(candidates, *spec.Replicas)
	}
	if spec.Percentage != nil && workloadReplicas != nil && spec.ScalableRef != nil {
		candidates = append(candidates, percentOf(*workloadReplicas, *spec.Percentage))
	}
	n := int32(0)
	if len(candidates) > 0 {
		n = slices.Max(candidates)
	}
	var limited string
	if fit, ok := fitWithin(corev1.ResourceList(spec.Limits), requests); ok {
		switch {
		case len(candidates) == 0:
			n = fit
		case fit < n:
			limited = fmt.Sprintf("spec.limits leave room for %d of the %d chunk(s) asked", fit, n)
			n = fit
		}
	}
	var limiting []string
	for i := range quotas {
		q := &quotas[i]
		if fit, ok := fitWithin(quotaLeft(q), quotaRequests(requests)); ok && fit < n {
			n = fit
			limiting = append(limiting, q.Name)
		}
	}
	c := Count{Chunks: max(n, 0), Limits: limited}
	if len(limiting) > 0 {
		c.Quota = fmt.Sprintf("ResourceQuota %s leaves room for %d chunk(s) in the namespace", strings.Join(limiting, ", "), c.Chunks)
	}
	return c
}

// percentOf is ceil(replicas × percentage / 100), at least 1 when both are
// positive.
func percentOf(replicas, percentage int32) int32 {
	n := int32(math.Ceil(float64(replicas) * float64(percentage) / 100))
	if n < 1 && replicas > 0 && percentage > 0 {
		n = 1
	}
	return n
}

// fitWithin is how many chunks of requests fit in budget: the least of
// floor(budget / request) over the resources both name with a positive
// request; ok is false when they share none (budget does not constrain).
func fitWithin(budget, requests corev1.ResourceList) (int32, bool) {
	fit, ok := int64(math.MaxInt32), false
	for name, b := range budget {
		r, has := requests[name]
		if !has || r.Sign() <= 0 {
			continue
		}
		ok = true
		fit = min(fit, max(b.MilliValue(), 0)/r.MilliValue())
	}
	return int32(fit), ok //nolint:gosec // at most MaxInt32
}

// quotaLeft is what a ResourceQuota still admits: hard minus used, per
// resource it tracks.
func quotaLeft(q *corev1.ResourceQuota) corev1.ResourceList {
	left := corev1.ResourceList{}
	for name, hard := range q.Status.Hard {
		l := hard.DeepCopy()
		if used, ok := q.Status.Used[name]; ok {
			l.Sub(used)
		}
		left[name] = l
	}
	return left
}

// quotaRequests is one chunk as a ResourceQuota counts it: its requests
// under both the bare and the "requests." names, and one pod.
func quotaRequests(requests corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePods:               resource.MustParse("1"),
		corev1.ResourceName("count/pods"): resource.MustParse("1"),
	}
	for name, q := range requests {
		out[name] = q
		out[corev1.ResourceName("requests."+string(name))] = q
	}
	return out
}
