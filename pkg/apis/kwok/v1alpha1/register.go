package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group is the API group of Karpenter's kwok provider.
const Group = "karpenter.kwok.sh"

// KindKWOKNodeClass is the node class kind NodePools reference.
const KindKWOKNodeClass = "KWOKNodeClass"

var (
	// SchemeGroupVersion is karpenter.kwok.sh/v1alpha1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds KWOKNodeClass and KWOKNodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&KWOKNodeClass{}, &KWOKNodeClassList{})
}
