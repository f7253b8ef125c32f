package disruption

import (
	corev1 "k8s.io/api/core/v1"
	nodeutil "k8s.io/component-helpers/node/util"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Observed is what a caller knows of one managed node: the live cluster
// state (controllers/disruption) or an offline dump (pkg/scenario). Both
// turn it into the engine's Node with NodeOf, so the live controller and
// `joiner simulate` judge a node by the same rules.
type Observed struct {
	// Name, NodePool, Labels and Initialized are the node's as the solver's
	// ExistingNode holds them.
	Name        string
	NodePool    string
	Labels      map[string]string
	Initialized bool
	// Node is nil while the NodeClaim has no registered Node.
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Pods are the pods bound to the node.
	Pods []*corev1.Pod
	// MarkedForDeletion: a command in flight is removing the node (live
	// only).
	MarkedForDeletion bool
	// Nominated: the provisioner expects pending pods to land on it (live
	// only).
	Nominated bool
	// Queued: an earlier command holds the node (live only).
	Queued bool
}

// NodeOf is the engine's view of one managed node, priced from its
// NodePool's instance types with scheduling.ExistingNodePrice (listPrices:
// the list price alone); 0 when they no longer offer it: the engine then
// says Unconsolidatable.
func NodeOf(o Observed, its []*scheduling.InstanceType, listPrices bool) Node {
	n := Node{
		Name:         o.Name,
		Node:         o.Node,
		NodeClaim:    o.NodeClaim,
		NodePool:     o.NodePool,
		Pods:         o.Pods,
		InstanceType: o.Labels[v1.LabelInstanceType],
		Zone:         o.Labels[v1.LabelTopologyZone],
		CapacityType: o.Labels[v1.LabelCapacityType],
		Initialized:  o.Initialized,
		Deleting:     o.MarkedForDeletion || o.NodeClaim.DeletionTimestamp != nil || (o.Node != nil && o.Node.DeletionTimestamp != nil),
		Nominated:    o.Nominated,
		NotReady:     o.Node != nil && !nodeReady(o.Node),
		Disrupting:   o.Queued || (o.Node != nil && v1.HasDisruptedTaint(o.Node.Spec.Taints)),
	}
	price, _ := scheduling.ExistingNodePrice(its, n.InstanceType, n.Zone, n.CapacityType, o.Pods, listPrices)
	n.Price = price.Total()
	return n
}

func nodeReady(n *corev1.Node) bool {
	_, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
