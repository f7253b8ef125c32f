package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of the simulated cloud's kinds.
const Group = "sim.joiner.dev"

var (
	// SchemeGroupVersion is sim.joiner.dev/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds SimNodeClass and SimNodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&SimNodeClass{}, &SimNodeClassList{})
}

// Kind returns the GroupKind for a kind of this group, e.g. Kind("SimNodeClass").
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}
