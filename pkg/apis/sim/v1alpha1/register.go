package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of the simulated cloud's kinds.
const Group = "sim.joiner.dev"

var (
	// SchemeGroupVersion is sim.joiner.dev/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds SimNodeClass and SimNodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &SimNodeClass{}, &SimNodeClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// Kind returns the GroupKind for a kind of this group, e.g. Kind("SimNodeClass").
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}
