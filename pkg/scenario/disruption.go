package scenario

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/disruption"
)

// DisruptionInput builds what the disruption engine decides from: the
// Snapshot (see Snapshot), and for every Node labelled with a NodePool its
// NodeClaim, offering, price and state. A Node whose NodeClaim the
// manifests lack gets one made up from the Node, initialised when the Node
// says so and Consolidatable (a dump has no pod history, so the node is
// taken as quiet for consolidateAfter); notes says which.
func (m *Manifests) DisruptionInput(opts SnapshotOptions, dopts disruption.Options) (in *disruption.Input, notes []string, err error) {
	snap, err := m.Snapshot(opts)
	if err != nil {
		return nil, nil, err
	}
	in = &disruption.Input{Now: opts.Now, Cluster: snap, InstanceTypes: snap.InstanceTypes, NodePools: map[string]*v1.NodePool{}, PDBs: m.pdbs, Options: dopts}
	for _, np := range m.apiNodePools {
		in.NodePools[np.Name] = np
	}
	claims := map[string]*v1.NodeClaim{}
	for _, nc := range m.nodeClaims {
		claims[nc.obj.Name] = nc.obj
		if nc.obj.Status.NodeName != "" {
			claims[nc.obj.Status.NodeName] = nc.obj
		}
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range m.nodes {
		nodes[n.obj.Name] = n.obj
	}
	var madeUp []string
	for _, en := range snap.Nodes {
		if en.NodePool == "" {
			continue
		}
		n := nodes[en.Name]
		nc := claims[en.Name]
		if en.NodeClaim != "" && claims[en.NodeClaim] != nil {
			nc = claims[en.NodeClaim]
		}
		if nc == nil {
			nc = claimFor(n, opts.Now)
			madeUp = append(madeUp, n.Name)
		}
		dn := disruption.NodeOf(disruption.Observed{
			Name: en.Name, NodePool: en.NodePool, Labels: en.Labels, Initialized: en.Initialized,
			Node: n, NodeClaim: nc, Pods: en.Pods,
		}, snap.InstanceTypes[en.NodePool], dopts.Scheduling.ListPrices)
		in.Nodes = append(in.Nodes, dn)
	}
	if len(madeUp) > 0 {
		notes = append(notes, fmt.Sprintf("%d nodes have no NodeClaim in the input; taken as launched by joiner and quiet for consolidateAfter: %s", len(madeUp), shortNames(madeUp)))
	}
	return in, notes, nil
}

// claimFor is the NodeClaim a managed Node implies when the dump lacks it.
func claimFor(n *corev1.Node, now time.Time) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations, CreationTimestamp: n.CreationTimestamp}}
	nc.Status.NodeName = n.Name
	at := metav1.NewTime(now)
	if n.Labels[v1.LabelNodeInitialized] == "true" {
		apimeta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: v1.ConditionTypeInitialized, LastTransitionTime: at})
	}
	apimeta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: v1.ConditionTypeConsolidatable, LastTransitionTime: at})
	return nc
}

func shortNames(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%v … and %d more", names[:5], len(names)-5)
	}
	return fmt.Sprint(names)
}
