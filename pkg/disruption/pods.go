package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// podDeletionCostAnnotation is the ReplicaSet controller's hint of how much
// a pod would rather stay; Karpenter reads it into the eviction cost.
const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

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

// OwnerlessWarning is what the controller (event OwnerlessPods on the Node
// and NodeClaim) and explain say about a node whose verdict names pods with
// no controller owner (Verdict.Ownerless).
func OwnerlessWarning(ownerless []string) string {
	return fmt.Sprintf("disrupting this node deletes pod(s) %s for good: they have no controller owner, so nothing recreates them after eviction; "+
		"like Karpenter v1, joiner does not let them block consolidation or drift: annotate them %s: \"true\" (or run them under a Deployment, StatefulSet or Job) to keep them",
		strings.Join(ownerless, ", "), v1.AnnotationDoNotDisrupt)
}
