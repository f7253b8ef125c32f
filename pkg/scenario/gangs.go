package scenario

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
	"github.com/joiner-dev/joiner/pkg/gang"
)

// Gang is one ProvisioningRequest of the input that joiner would still
// serve (its class is served and it is neither provisioned nor finished),
// with the pods it stands for.
type Gang struct {
	Request *autoscalingv1.ProvisioningRequest
	Pods    []*corev1.Pod
	// ExistingOnly: check-capacity, answered on the existing capacity.
	ExistingOnly bool
}

// Gangs are the input's ProvisioningRequests joiner would plan, each as one
// unit apart from the pending pods (as the controller plans them before a
// batch); a request naming a PodTemplate the input lacks is an error.
func (m *Manifests) Gangs() ([]Gang, error) {
	var out []Gang
	for _, r := range m.requests {
		pr := r.obj
		if !gang.Served(pr.Spec.ProvisioningClassName) {
			m.Ignored = append(m.Ignored, "ProvisioningRequest "+pr.Namespace+"/"+pr.Name+" (class "+pr.Spec.ProvisioningClassName+")")
			continue
		}
		done := false
		for _, t := range []string{autoscalingv1.Provisioned, autoscalingv1.Failed, autoscalingv1.BookingExpired, autoscalingv1.CapacityRevoked} {
			done = done || meta.IsStatusConditionTrue(pr.Status.Conditions, t)
		}
		if done {
			continue
		}
		templates := map[string]*corev1.PodTemplate{}
		for _, ps := range pr.Spec.PodSets {
			if t, ok := m.podTemplates[pr.Namespace+"/"+ps.PodTemplateRef.Name]; ok {
				templates[ps.PodTemplateRef.Name] = t
			}
		}
		if pr.UID == "" {
			pr.UID = types.UID(pr.Namespace + "/" + pr.Name)
		}
		pods, err := gang.Pods(pr, templates)
		if err != nil {
			return nil, fmt.Errorf("%s: ProvisioningRequest %s/%s: %w", r.where, pr.Namespace, pr.Name, err)
		}
		out = append(out, Gang{Request: pr, Pods: pods, ExistingOnly: pr.Spec.ProvisioningClassName == autoscalingv1.ClassCheckCapacity})
	}
	return out, nil
}

// consumesGang reports whether a pending pod of the input consumes one of
// its ProvisioningRequests: it is the request's, left out of the batch as
// the provisioner leaves it out.
func (m *Manifests) consumesGang(p *corev1.Pod) bool {
	name := p.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest]
	if name == "" {
		return false
	}
	for _, r := range m.requests {
		if r.obj.Namespace == p.Namespace && r.obj.Name == name && gang.Served(r.obj.Spec.ProvisioningClassName) {
			return true
		}
	}
	return false
}
