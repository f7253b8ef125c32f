package sim

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-dev/joiner/pkg/metrics"
	"github.com/joiner-dev/joiner/pkg/plantedbug"
)

// TagClusterID carries the launching cluster's unique identity (the UID of
// its kube-system namespace) beside the human-chosen TagCluster name.
//
// Names are not unique: two clusters deployed from one template often share
// --cluster-name, and then each one's garbage collection and drift checks
// act on the other's instances, terminating its nodes (the failure in the
// seed "two clusters whose controllers terminate each other's nodes"). The
// UID cannot collide, so ownership needs both to match.
const TagClusterID = "sim.joiner.dev/cluster-id"

// identity is who this cluster is, as written on and checked against
// instances.
type identity struct {
	name string
	// id is empty when the caller did not resolve one (unit tests, tools);
	// then the name alone decides, as it does for Karpenter's AWS tags.
	id string
}

// owns reports whether inst provably belongs to this cluster. With an id,
// an instance lacking the id tag is not provably ours and is left alone.
func (c identity) owns(inst *Instance) bool {
	if inst == nil || inst.Tags[TagCluster] != c.name {
		return false
	}
	if plantedbug.Active(plantedbug.GCNamesake) {
		return true // the name alone: a namesake's instances look ours
	}
	return c.id == "" || inst.Tags[TagClusterID] == c.id
}

// namesake reports whether inst carries this cluster's name but another
// cluster's id: evidence that two clusters share one --cluster-name.
func (c identity) namesake(inst *Instance) bool {
	return inst != nil && c.id != "" && inst.Tags[TagCluster] == c.name &&
		inst.Tags[TagClusterID] != "" && inst.Tags[TagClusterID] != c.id
}

// tag writes the identity onto an instance's tags.
func (c identity) tag(tags map[string]string) {
	tags[TagCluster] = c.name
	if c.id != "" {
		tags[TagClusterID] = c.id
	}
}

// ClusterID returns the identity of the cluster r reads from: the UID of
// its kube-system namespace, which every cluster has and no two share.
func ClusterID(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the kube-system namespace to identify the cluster: %w", err)
	}
	return string(ns.UID), nil
}

// namesakeReporter logs, once per foreign cluster id, that another cluster
// uses this cluster's name. The instances are never touched; the log line
// is what tells the operator to rename one of the clusters.
type namesakeReporter struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *namesakeReporter) report(ctx context.Context, self identity, insts []*Instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, inst := range insts {
		other := inst.Tags[TagClusterID]
		if r.seen[other] {
			continue
		}
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		r.seen[other] = true
		metrics.ClusterNamesakes.Set(float64(len(r.seen)))
		log.FromContext(ctx).Error(nil, "another cluster uses this cluster's name; joiner leaves its instances alone, but the two clusters must have distinct --cluster-name values or tooling that trusts the name (IAM conditions, cost reports, older controllers) will mix them up",
			"cluster-name", self.name, "cluster-id", self.id, "other-cluster-id", other, "instance", inst.ID)
	}
}
