package state

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// Field indexes joiner's controllers list by. RegisterFieldIndexes adds them
// to a manager's cache once, before any controller is registered.
const (
	// IndexNodeProviderID indexes Nodes by spec.providerID.
	IndexNodeProviderID = "spec.providerID"
	// IndexNodeClaimProviderID indexes NodeClaims by status.providerID.
	IndexNodeClaimProviderID = "status.providerID"
	// IndexPodNodeName indexes Pods by spec.nodeName; pods bound to no
	// node are under "", so the provisioner copies only the pending pods
	// out of the cache each batch, not every pod of the cluster.
	IndexPodNodeName = "spec.nodeName"
)

// RegisterFieldIndexes registers the field indexes above on indexer (the
// manager's GetFieldIndexer()). It is the one place indexes are registered:
// controllers.Register calls it for the operator and test.NewManager for the
// controller tests; a controller that lists by an index never registers it
// itself, so an index cannot be registered twice (the cache refuses that).
func RegisterFieldIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, IndexNodeProviderID, func(o client.Object) []string {
		if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodes by %s: %w", IndexNodeProviderID, err)
	}
	if err := indexer.IndexField(ctx, &v1.NodeClaim{}, IndexNodeClaimProviderID, func(o client.Object) []string {
		if id := o.(*v1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by %s: %w", IndexNodeClaimProviderID, err)
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, IndexPodNodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by %s: %w", IndexPodNodeName, err)
	}
	return nil
}
