package cloudprovider

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// NodeClassKinds is the set of node class kinds a provider serves. A
// NodeClaim (or NodePool) whose nodeClassRef names another kind belongs to
// another controller, such as Karpenter running beside joiner during a
// migration, and joiner must leave it alone.
type NodeClassKinds map[schema.GroupKind]bool

// SupportedNodeClassKinds resolves cp.GetSupportedNodeClasses through scheme.
func SupportedNodeClassKinds(cp CloudProvider, scheme *runtime.Scheme) (NodeClassKinds, error) {
	out := NodeClassKinds{}
	for _, obj := range cp.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("resolving node class kind %T: %w", obj, err)
		}
		out[gvk.GroupKind()] = true
	}
	return out, nil
}

// Manages reports whether ref names one of the kinds.
func (k NodeClassKinds) Manages(ref *v1.NodeClassReference) bool {
	return ref != nil && k[schema.GroupKind{Group: ref.Group, Kind: ref.Kind}]
}
