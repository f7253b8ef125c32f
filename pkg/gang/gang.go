// Package gang holds what a ProvisioningRequest is to the solver, for the
// controller that serves requests and for `joiner simulate`, which reads
// them from a dump: the pods a request stands for, whether joiner serves
// its class, and the words for a gang that cannot be placed whole. It
// never talks to an API server.
package gang

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Served reports whether joiner answers requests of class.
func Served(class string) bool {
	return class == autoscalingv1.ClassCheckCapacity || class == autoscalingv1.ClassBestEffortAtomicScaleUp
}

// Pods builds the pods a request stands for: Count pods per pod set,
// each from its PodTemplate's pod template, pending and annotated as
// consumers of the request. Their names and UIDs derive from the request's
// UID, so every plan of the same request names the same pods (and the
// NodeClaims planned for them get the same deterministic names).
func Pods(pr *autoscalingv1.ProvisioningRequest, templates map[string]*corev1.PodTemplate) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for i, ps := range pr.Spec.PodSets {
		tmpl, ok := templates[ps.PodTemplateRef.Name]
		if !ok {
			return nil, fmt.Errorf("podSets[%d].podTemplateRef: PodTemplate %s/%s not found", i, pr.Namespace, ps.PodTemplateRef.Name)
		}
		for j := range ps.Count {
			name := fmt.Sprintf("%s-%d-%d", pr.Name, i, j)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace:   pr.Namespace,
					Name:        name,
					UID:         UID(pr.UID, name),
					Labels:      maps.Clone(tmpl.Template.Labels),
					Annotations: maps.Clone(tmpl.Template.Annotations),
				},
				Spec: *tmpl.Template.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
					Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest] = pr.Name
			pod.Annotations[autoscalingv1.AnnotationProvisioningClassName] = pr.Spec.ProvisioningClassName
			out = append(out, pod)
		}
	}
	return out, nil
}

// UID is a stable UID for the request's pod (or placeholder) name.
func UID(request types.UID, name string) types.UID {
	sum := sha256.Sum256([]byte(string(request) + "/" + name))
	return types.UID(hex.EncodeToString(sum[:16]))
}

// Unplaced says how many of the request's pods fit nowhere and why
// the first of them does not, per NodePool (scheduling.Message's words).
func Unplaced(plan *scheduling.Plan, total int, existingOnly bool) string {
	pe := plan.Unschedulable[0]
	var parts []string
	if pe.Existing != nil {
		parts = append(parts, "existing nodes: "+scheduling.Message(pe.Existing))
	}
	pools := make([]string, 0, len(pe.NodePools))
	for name := range pe.NodePools {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	for _, name := range pools {
		parts = append(parts, fmt.Sprintf("nodepool %q: %s", name, scheduling.Message(pe.NodePools[name])))
	}
	where := "joiner's NodePools and the existing nodes"
	if existingOnly {
		where = "the existing capacity"
	}
	return fmt.Sprintf("%d of the request's %d pods fit nowhere in %s, so nothing was launched (all or none); pod %s: %s",
		len(plan.Unschedulable), total, where, pe.Pod.Name, strings.Join(parts, "; "))
}
