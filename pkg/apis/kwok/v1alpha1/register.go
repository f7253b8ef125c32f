package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of Karpenter's kwok provider.
const Group = "karpenter.kwok.sh"

// KindKWOKNodeClass is the node class kind NodePools reference.
const KindKWOKNodeClass = "KWOKNodeClass"

var (
	// SchemeGroupVersion is karpenter.kwok.sh/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds KWOKNodeClass and KWOKNodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &KWOKNodeClass{}, &KWOKNodeClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
