package sim

import (
	"context"

	clusteridentity "github.com/joiner-dev/joiner/pkg/cloudprovider/identity"
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

// reportNamesakes reports each instance that carries this cluster's name
// but another cluster's id (identity.Namesakes logs each cluster once).
func (c identity) reportNamesakes(ctx context.Context, n *clusteridentity.Namesakes, insts []*Instance) {
	for _, inst := range insts {
		n.Report(ctx, c.name, c.id, inst.Tags[TagClusterID], inst.ID)
	}
}
