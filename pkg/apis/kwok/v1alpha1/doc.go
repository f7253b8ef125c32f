// Package v1alpha1 holds the karpenter.kwok.sh/v1alpha1 API: the
// KWOKNodeClass of Karpenter's kwok provider, served by joiner's simulated
// cloud. Test clusters, simulators and CI set up for Karpenter's kwok
// provider (including Karpenter's own end-to-end suites, whose default node
// class it is) switch to joiner without changing a manifest.
//
// The kind's schema, printed columns and status default are the kwok
// provider's; its instance types (c, s and m families, kwok's labels and
// names such as c-4x-amd64-linux) are built by the simulated cloud
// (pkg/cloudprovider/sim, kwok.go).
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.kwok.sh
package v1alpha1
