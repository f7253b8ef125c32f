// Package v1alpha1 holds Karpenter's karpenter.sh/v1alpha1 API that joiner
// serves: NodeOverlay, which adjusts the price of matching offerings and
// adds extended resources to matching instance types (behind Karpenter's
// NodeOverlay feature gate). It decides names, shapes and validation; how
// overlays are applied lives in pkg/overlay.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
