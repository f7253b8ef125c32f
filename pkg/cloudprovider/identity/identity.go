package identity

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-dev/joiner/pkg/logging"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// ClusterID returns the identity of the cluster r reads from: the UID of
// its kube-system namespace, which every cluster has and no two share.
func ClusterID(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system namespace to identify the cluster: %w", err)
	}
	return string(ns.UID), nil
}

// Namesakes counts the other clusters whose instances carry this cluster's
// name (joiner_cluster_namesakes) and logs each one once. The instances are
// never touched; the log line (and the event a provider may add) is what
// tells the operator to rename one of the clusters. The zero value is ready
// to use.
type Namesakes struct {
	mu   sync.Mutex
	seen map[string]bool
}

// Report records that instance carries this cluster's name (clusterName)
// but another cluster's id (other, where this one's is clusterID). It
// returns true the first time other is seen, so a caller can say it where
// users look as well; later instances of the same cluster are quiet.
func (n *Namesakes) Report(ctx context.Context, clusterName, clusterID, other, instance string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[other] {
		return false
	}
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	n.seen[other] = true
	metrics.ClusterNamesakes.Set(float64(len(n.seen)))
	log.FromContext(ctx).Error(nil, "another cluster uses this cluster's name; joiner leaves its instances alone, but the two clusters must have distinct cluster names or tooling that trusts the name (Karpenter, IAM conditions, cost reports) will mix them up",
		logging.ClusterName, clusterName, logging.ClusterID, clusterID, logging.OtherClusterID, other, logging.Instance, instance)
	return true
}
