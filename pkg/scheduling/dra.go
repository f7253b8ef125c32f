package scheduling

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// IgnoreDRARequestsSetting is the operator setting (Karpenter's) that
// decides whether pods with Dynamic Resource Allocation claims are
// provisioned; a DynamicResources reason names it so the user knows what
// to change.
const IgnoreDRARequestsSetting = "IGNORE_DRA_REQUESTS"

// KindDynamicResources: the pod claims devices through Dynamic Resource
// Allocation and the snapshot does not plan them.
const KindDynamicResources ReasonKind = "DynamicResources"

// DynamicResources: the pod has resource claims (spec.resourceClaims) and
// the solver was asked not to plan them (IGNORE_DRA_REQUESTS=true,
// Karpenter's default). Karpenter leaves such pods alone; a node launched
// without regard to the claims would likely not carry the devices, so the
// pod is not provisioned at all, and is told why and which setting
// changes it.
type DynamicResources struct {
	// Claims are the pod's resource claim names (spec.resourceClaims[].name).
	Claims []string `json:"claims,omitempty"`
	// Setting is the operator setting that decides it.
	Setting string `json:"setting,omitempty"`
}

func (DynamicResources) Kind() ReasonKind { return KindDynamicResources }
func (r DynamicResources) String() string { return Message(r) }

// HasResourceClaims reports whether pod claims devices through Dynamic
// Resource Allocation: the one reading of "this pod uses DRA" for the
// solver and its adapters.
func HasResourceClaims(pod *corev1.Pod) bool { return len(pod.Spec.ResourceClaims) > 0 }

// dynamicResourcesReason is why a pod with resource claims is not placed
// under the snapshot's policy, or nil when it has none or they are planned.
func (sv *solver) dynamicResourcesReason(pod *corev1.Pod) Reason {
	if !HasResourceClaims(pod) || sv.opts.PlanDynamicResources {
		return nil
	}
	r := DynamicResources{Setting: IgnoreDRARequestsSetting}
	for _, c := range pod.Spec.ResourceClaims {
		r.Claims = append(r.Claims, c.Name)
	}
	return r
}

// dynamicResourcesMessage says which claims are ignored, why, and what
// the user can do.
func dynamicResourcesMessage(r DynamicResources) string {
	return "pod has Dynamic Resource Allocation claims (" + strings.Join(r.Claims, ", ") + ") and " + r.Setting +
		"=true (Karpenter's default) leaves such pods unprovisioned, since a node launched without regard to the claims " +
		"may not carry the devices; joiner cannot plan devices yet (" + r.Setting + "=false is refused at start-up), " +
		"so the pod waits for a node joiner does not manage, or request the device plugin's extended resource (such as nvidia.com/gpu) instead of a claim"
}

// writeClaimsKey keeps pods with resource claims apart from pods without
// in the class key (two pods differing only in their claims must not
// share a verdict).
func writeClaimsKey(b *strings.Builder, p *corev1.Pod) {
	for _, c := range p.Spec.ResourceClaims {
		b.WriteString("|claim:")
		b.WriteString(c.Name)
		b.WriteByte('=')
		if c.ResourceClaimName != nil {
			b.WriteString(*c.ResourceClaimName)
		}
		b.WriteByte('/')
		if c.ResourceClaimTemplateName != nil {
			b.WriteString(*c.ResourceClaimTemplateName)
		}
	}
}
