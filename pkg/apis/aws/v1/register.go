package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of the EC2NodeClass.
const Group = "karpenter.k8s.aws"

var (
	// SchemeGroupVersion is karpenter.k8s.aws/v1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}

	// SchemeBuilder registers this package's kinds.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds EC2NodeClass and EC2NodeClassList to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &EC2NodeClass{}, &EC2NodeClassList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// Kind returns the GroupKind for a kind of this group, e.g. Kind("EC2NodeClass").
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

var _ runtime.Object = &EC2NodeClass{}
