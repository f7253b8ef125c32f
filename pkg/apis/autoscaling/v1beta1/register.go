package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the CapacityBuffer's API group.
const Group = "autoscaling.x-k8s.io"

var (
	// SchemeGroupVersion is autoscaling.x-k8s.io/v1beta1.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1beta1"}

	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds CapacityBuffer (and its list) to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &CapacityBuffer{}, &CapacityBufferList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
