package capacitybuffer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
)

// Reasons a buffer is not ready for provisioning (its ReadyForProvisioning
// condition, Karpenter's where it has one).
const (
	ReasonPodTemplateNotFound    = "PodTemplateNotFound"
	ReasonScalableRefNotFound    = "ScalableRefNotFound"
	ReasonUnsupportedScalableRef = "UnsupportedScalableRef"
	ReasonUnsupportedStrategy    = "UnsupportedProvisioningStrategy"
)

// Objects finds what a buffer names: the live cluster's (the controller's
// client) or a dump's (joiner simulate -f). A nil result with a nil error
// means the object does not exist.
type Objects interface {
	// PodTemplate is the PodTemplate namespace/name.
	PodTemplate(ctx context.Context, namespace, name string) (*corev1.PodTemplate, error)
	// Workload is the pod template and replicas of the apps Deployment,
	// StatefulSet or ReplicaSet (kind) namespace/name.
	Workload(ctx context.Context, kind, namespace, name string) (*corev1.PodTemplateSpec, *int32, error)
	// ResourceQuotas are the namespace's ResourceQuotas.
	ResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error)
}

// Resolution is what a buffer resolves to.
type Resolution struct {
	// Buffer is the buffer's namespace/name.
	Buffer types.NamespacedName
	// NotReady is the reason the buffer cannot be planned ("" when it
	// can), Message says why in words.
	NotReady, Message string
	// PodTemplate is the podTemplateRef's PodTemplate (nil for a
	// scalableRef).
	PodTemplate *corev1.PodTemplate
	// Count is the chunk count; Pods its virtual pods.
	Count Count
	Pods  []*corev1.Pod
}

// Resolve is the one way a buffer becomes virtual pods, for the controller
// and for joiner simulate: its strategy (only active capacity is planned),
// its chunk (the PodTemplate, or the pod template of the apps workload it
// scales), and its chunk count (Chunks). An error is one retrying may fix;
// a buffer that names what does not resolve is NotReady.
func Resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer, objs Objects) (Resolution, error) {
	res, err := resolve(ctx, cb, objs)
	res.Buffer = types.NamespacedName{Namespace: cb.Namespace, Name: cb.Name}
	return res, err
}

func resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer, objs Objects) (Resolution, error) {
	strategy := ptr.Deref(cb.Spec.ProvisioningStrategy, autoscalingv1beta1.ProvisioningStrategyActiveCapacity)
	if strategy != autoscalingv1beta1.ProvisioningStrategyActiveCapacity {
		return Resolution{NotReady: ReasonUnsupportedStrategy, Message: fmt.Sprintf("provisioningStrategy %q is not one joiner implements (only %s); the buffer is left to the autoscaler that does",
			strategy, autoscalingv1beta1.ProvisioningStrategyActiveCapacity)}, nil
	}
	var res Resolution
	var template *corev1.PodTemplateSpec
	var workloadReplicas *int32
	switch ref := cb.Spec.ScalableRef; {
	case cb.Spec.PodTemplateRef != nil:
		name := cb.Spec.PodTemplateRef.Name
		pt, err := objs.PodTemplate(ctx, cb.Namespace, name)
		if err != nil {
			return res, fmt.Errorf("getting podtemplate %s: %w", name, err)
		}
		if pt == nil {
			return Resolution{NotReady: ReasonPodTemplateNotFound, Message: fmt.Sprintf("PodTemplate %s/%s not found", cb.Namespace, name)}, nil
		}
		res.PodTemplate, template = pt, &pt.Template
	case ref == nil:
		return Resolution{NotReady: ReasonScalableRefNotFound, Message: "neither podTemplateRef nor scalableRef is set"}, nil
	case ref.APIGroup != appsv1.GroupName || (ref.Kind != autoscalingv1beta1.KindDeployment && ref.Kind != autoscalingv1beta1.KindStatefulSet && ref.Kind != autoscalingv1beta1.KindReplicaSet):
		return Resolution{NotReady: ReasonUnsupportedScalableRef, Message: fmt.Sprintf("scalableRef %s %q in group %q: joiner reads the pod template of apps Deployments, StatefulSets and ReplicaSets; use one of them or a podTemplateRef", ref.Kind, ref.Name, ref.APIGroup)}, nil
	default:
		t, replicas, err := objs.Workload(ctx, ref.Kind, cb.Namespace, ref.Name)
		if err != nil {
			return res, fmt.Errorf("getting %s %s: %w", ref.Kind, ref.Name, err)
		}
		if t == nil {
			return Resolution{NotReady: ReasonScalableRefNotFound, Message: fmt.Sprintf("%s %s/%s not found", ref.Kind, cb.Namespace, ref.Name)}, nil
		}
		template, workloadReplicas = t, ptr.To(ptr.Deref(replicas, 1))
	}
	quotas, err := objs.ResourceQuotas(ctx, cb.Namespace)
	if err != nil {
		return res, fmt.Errorf("listing resourcequotas of namespace %s: %w", cb.Namespace, err)
	}
	chunk := ChunkPod(cb, template)
	res.Count = Chunks(&cb.Spec, chunk, workloadReplicas, quotas)
	if res.Count.Chunks > 0 {
		res.Pods = VirtualPods(cb, chunk, res.Count.Chunks)
	}
	return res, nil
}
