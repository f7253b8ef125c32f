package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of NodePool and NodeClaim.
const Group = "karpenter.sh"

var (
	// SchemeGroupVersion is karpenter.sh/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}
	// GroupVersion is an alias of SchemeGroupVersion, for controller-runtime users.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds NodePool and NodeClaim (and their lists) to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePool{}, &NodePoolList{},
		&NodeClaim{}, &NodeClaimList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
