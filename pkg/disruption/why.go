package disruption

import (
	"fmt"
	"strings"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// WhyKind names why a node is left alone: a small fixed vocabulary a
// reader (the controller, explain, simulate, a test) can branch on without
// reading the message.
type WhyKind string

// Node-level kinds: Karpenter's DisruptionBlocked reasons about the node
// itself.
const (
	// WhyNotManaged: the node has no NodeClaim.
	WhyNotManaged WhyKind = "NotManaged"
	// WhyNoNodePoolLabel: the node has no karpenter.sh/nodepool label.
	WhyNoNodePoolLabel WhyKind = "NoNodePoolLabel"
	// WhyNodePoolNotFound: the node's NodePool does not exist (NodePool).
	WhyNodePoolNotFound WhyKind = "NodePoolNotFound"
	// WhyNoNode: the NodeClaim has no registered Node yet.
	WhyNoNode WhyKind = "NoNode"
	// WhyNotInitialized: the node is not initialised.
	WhyNotInitialized WhyKind = "NotInitialized"
	// WhyDeleting: the node is deleting or marked for deletion.
	WhyDeleting WhyKind = "Deleting"
	// WhyDisrupting: an earlier command already disrupts the node.
	WhyDisrupting WhyKind = "Disrupting"
	// WhyNominated: the provisioner expects pending pods on the node.
	WhyNominated WhyKind = "Nominated"
	// WhyNodeDoNotDisrupt: the Node or NodeClaim has the
	// karpenter.sh/do-not-disrupt annotation.
	WhyNodeDoNotDisrupt WhyKind = "NodeDoNotDisrupt"
)

// Pod-level kinds: Karpenter's DisruptionBlocked reasons about the node's
// pods (they also hold drift unless the NodeClaim has a
// terminationGracePeriod).
const (
	// WhyPodDoNotDisrupt: a pod has the karpenter.sh/do-not-disrupt
	// annotation (Pod).
	WhyPodDoNotDisrupt WhyKind = "PodDoNotDisrupt"
	// WhyPDB: PodDisruptionBudgets forbid evicting a pod (PDBs: the one
	// with no disruption left, or every PDB when several select the pod).
	WhyPDB WhyKind = "PDB"
)

// Kinds that keep emptiness and consolidation from a node nothing blocks
// (Karpenter's Unconsolidatable).
const (
	// WhyStatic: the NodePool is static (NodePool).
	WhyStatic WhyKind = "Static"
	// WhyConsolidationDisabled: consolidateAfter is Never (NodePool).
	WhyConsolidationDisabled WhyKind = "ConsolidationDisabled"
	// WhyNotConsolidatable: the NodeClaim's Consolidatable condition is
	// not True (its pods changed within consolidateAfter).
	WhyNotConsolidatable WhyKind = "NotConsolidatable"
	// WhyWhenEmpty: the NodePool consolidates only empty nodes (NodePool).
	WhyWhenEmpty WhyKind = "WhenEmpty"
	// WhyUnknownOffering: the node's instance type, zone or capacity type
	// is unknown.
	WhyUnknownOffering WhyKind = "UnknownOffering"
	// WhyNoPrice: no price is known for the node's offering (InstanceType,
	// Zone, CapacityType).
	WhyNoPrice WhyKind = "NoPrice"
	// WhyNotCheaper: no arrangement of the node's pods is cheaper enough.
	WhyNotCheaper WhyKind = "NotCheaper"
	// WhyBalanced: a Balanced NodePool finds the move's savings too small
	// for its disruption (NodePool, Savings, Disruption).
	WhyBalanced WhyKind = "Balanced"
	// WhyWouldCreateNodes: removing the nodes needs more new nodes than
	// the method may create (Count).
	WhyWouldCreateNodes WhyKind = "WouldCreateNodes"
	// WhySpotToSpotDisabled: the replacement would be spot for a spot
	// node and the SpotToSpotConsolidation feature gate is off.
	WhySpotToSpotDisabled WhyKind = "SpotToSpotDisabled"
	// WhySpotToSpotTypes: too few cheaper spot types for single-node
	// spot-to-spot (Count found, Want needed).
	WhySpotToSpotTypes WhyKind = "SpotToSpotTypes"
	// WhyMinValues: the cheaper instance types do not meet a requirement's
	// minValues (Key, Count found, Want needed).
	WhyMinValues WhyKind = "MinValues"
)

// Kinds from the simulation that any method may meet (consolidation and
// drift alike).
const (
	// WhyPodsWouldNotSchedule: a pod of the node would not schedule
	// elsewhere (Pod; Solver is the solver's reason, NodePool the NodePool
	// it is about, "" when it is about the existing nodes).
	WhyPodsWouldNotSchedule WhyKind = "PodsWouldNotSchedule"
	// WhyUninitializedNode: the simulation puts a pod on a node that is not
	// initialised (Node).
	WhyUninitializedNode WhyKind = "UninitializedNode"
	// WhySchedulerWouldSpread: kube-scheduler, placing the evicted pods
	// as its profile's resource score ranks the nodes (the most room first
	// by default), would leave a pod (Pod) of the node no room where the
	// simulation put it (realise.go).
	WhySchedulerWouldSpread WhyKind = "SchedulerWouldSpread"
	// WhySchedulerTiesUnfollowed: where a pod (Pod) of the node lands
	// hangs on more kube-scheduler score ties than the replay follows
	// (realise.go maxTieBranches), so the command is not proven and not
	// taken: no pod was shown to lack room.
	WhySchedulerTiesUnfollowed WhyKind = "SchedulerTiesUnfollowed"
	// WhyNoBudget: the NodePool's budget for the method's reason is used up
	// (NodePool, Budget).
	WhyNoBudget WhyKind = "NoBudget"
)

// Kinds that keep only the drift methods from a drifted node.
const (
	// WhyDriftPaused: the controller paused drift for the NodePool
	// (NodePool; Detail is the controller's cause).
	WhyDriftPaused WhyKind = "DriftPaused"
	// WhyStaticScalingDown: the static NodePool is over its replicas
	// (NodePool, Count replicas).
	WhyStaticScalingDown WhyKind = "StaticScalingDown"
	// WhyStaticAtLimit: a replacement would exceed the static NodePool's
	// limits.nodes (NodePool, Count the limit).
	WhyStaticAtLimit WhyKind = "StaticAtLimit"
	// WhyStaticNoInstanceType: the static NodePool's requirements admit no
	// instance type (NodePool).
	WhyStaticNoInstanceType WhyKind = "StaticNoInstanceType"
)

// WhyKinds lists every kind, so a table test can cover each and a metric
// could publish zeros.
var WhyKinds = []WhyKind{
	WhyNotManaged, WhyNoNodePoolLabel, WhyNodePoolNotFound, WhyNoNode, WhyNotInitialized, WhyDeleting,
	WhyDisrupting, WhyNominated, WhyNodeDoNotDisrupt,
	WhyPodDoNotDisrupt, WhyPDB,
	WhyStatic, WhyConsolidationDisabled, WhyNotConsolidatable, WhyWhenEmpty, WhyUnknownOffering, WhyNoPrice,
	WhyNotCheaper, WhyBalanced, WhyWouldCreateNodes, WhySpotToSpotDisabled, WhySpotToSpotTypes, WhyMinValues,
	WhyPodsWouldNotSchedule, WhyUninitializedNode, WhySchedulerWouldSpread, WhySchedulerTiesUnfollowed, WhyNoBudget,
	WhyDriftPaused, WhyStaticScalingDown, WhyStaticAtLimit, WhyStaticNoInstanceType,
}

// Why is one typed reason a node is left alone: its kind and the facts
// its message needs (each kind's doc names the fields it reads; the others
// stay zero). The zero Why means no reason. String is the one place a
// verdict becomes text: the controller's events and NodeClaim record,
// `joiner explain` and `simulate --disruption` all print it.
type Why struct {
	Kind WhyKind
	// NodePool is the NodePool the reason is about.
	NodePool string
	// Pod is the pod (namespace/name) the reason is about.
	Pod string
	// Node is the node the reason is about, other than the verdict's own.
	Node string
	// PDBs are the blocking PodDisruptionBudgets (namespace/name), sorted.
	PDBs []string
	// Budget is the disruption reason whose budget is used up.
	Budget Reason
	// Count and Want are the figures the kind compares.
	Count, Want int64
	// Key is a requirement's label key.
	Key string
	// InstanceType, Zone and CapacityType name an offering.
	InstanceType, Zone, CapacityType string
	// Savings and Disruption are a Balanced move's shares (0..1) of the
	// NodePool's cost and disruption.
	Savings, Disruption float64
	// Solver is the solver's reason a pod would not schedule; nil when it
	// gave none.
	Solver scheduling.Reason
	// Detail is free text from outside the engine (a paused drift's cause).
	Detail string
}

// IsZero reports whether w says nothing: the node is not held.
func (w Why) IsZero() bool { return w.Kind == "" }

// String renders w in Karpenter's words where Karpenter has them (its
// DisruptionBlocked and Unconsolidatable event messages), "" for the zero
// Why.
func (w Why) String() string {
	switch w.Kind {
	case "":
		return ""
	case WhyNotManaged:
		return "node isn't managed by karpenter"
	case WhyNoNodePoolLabel:
		return fmt.Sprintf("node doesn't have required label (label=%s)", v1.LabelNodePool)
	case WhyNodePoolNotFound:
		return fmt.Sprintf("nodepool %q not found", w.NodePool)
	case WhyNoNode:
		return "nodeclaim does not have an associated node"
	case WhyNotInitialized:
		return "node isn't initialized"
	case WhyDeleting:
		return "node is deleting or marked for deletion"
	case WhyDisrupting:
		return "node is already being disrupted"
	case WhyNominated:
		return "node is nominated for a pending pod"
	case WhyNodeDoNotDisrupt:
		return fmt.Sprintf("disruption is blocked through the %q annotation", v1.AnnotationDoNotDisrupt)
	case WhyPodDoNotDisrupt:
		return fmt.Sprintf("pod has %q annotation (Pod=%s)", v1.AnnotationDoNotDisrupt, w.Pod)
	case WhyPDB:
		if len(w.PDBs) > 1 {
			return "eviction does not support multiple PDBs (PodDisruptionBudget(s)=[" + strings.Join(w.PDBs, " ") + "])"
		}
		return "pdb prevents pod evictions (PodDisruptionBudget=[" + strings.Join(w.PDBs, " ") + "])"
	case WhyStatic:
		return fmt.Sprintf("NodePool %q is static (spec.replicas): its nodes are never consolidated", w.NodePool)
	case WhyConsolidationDisabled:
		return fmt.Sprintf("NodePool %q has consolidation disabled", w.NodePool)
	case WhyNotConsolidatable:
		return fmt.Sprintf("node is not consolidatable yet (its %s condition is not True: pods changed within consolidateAfter)", v1.ConditionTypeConsolidatable)
	case WhyWhenEmpty:
		return fmt.Sprintf("NodePool %q has non-empty consolidation disabled", w.NodePool)
	case WhyUnknownOffering:
		return "node's instance type, zone or capacity type is unknown"
	case WhyNoPrice:
		return fmt.Sprintf("no price known for instance type %q in %s/%s", w.InstanceType, w.Zone, w.CapacityType)
	case WhyNotCheaper:
		return "can't replace with a cheaper node"
	case WhyBalanced:
		return fmt.Sprintf("NodePool %q is Balanced: the move saves %.1f%% of its cost for %.1f%% of its disruption (score %.2f, needs %.2f)",
			w.NodePool, 100*w.Savings, 100*w.Disruption, w.Savings/w.Disruption, 1.0/balancedK)
	case WhyWouldCreateNodes:
		return fmt.Sprintf("can't remove without creating %d nodes", w.Count)
	case WhySpotToSpotDisabled:
		return "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
	case WhySpotToSpotTypes:
		return fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d", w.Want, w.Count)
	case WhyMinValues:
		return fmt.Sprintf("minValues requirement is not met for %q (%d cheaper instance types, want %d)", w.Key, w.Count, w.Want)
	case WhyPodsWouldNotSchedule:
		solver := "no reason given"
		switch {
		case w.Solver != nil && w.NodePool != "":
			solver = fmt.Sprintf("nodepool %q: %s", w.NodePool, w.Solver)
		case w.Solver != nil:
			solver = w.Solver.String()
		}
		return fmt.Sprintf("not all pods would schedule, pod %q: %s", w.Pod, solver)
	case WhyUninitializedNode:
		return fmt.Sprintf("would schedule against uninitialized node %q", w.Node)
	case WhySchedulerWouldSpread:
		return fmt.Sprintf("pod %q would not schedule where the simulation puts it: kube-scheduler, placing the evicted pods as its resource score ranks the nodes, would leave it no room", w.Pod)
	case WhySchedulerTiesUnfollowed:
		return fmt.Sprintf("where pod %q would land hangs on more kube-scheduler score ties than the replay follows: the command is not proven, so it is not taken", w.Pod)
	case WhyNoBudget:
		return fmt.Sprintf("no disruption budget left for reason %s in NodePool %q", w.Budget, w.NodePool)
	case WhyDriftPaused:
		return fmt.Sprintf("drift of NodePool %q is paused: %s", w.NodePool, w.Detail)
	case WhyStaticScalingDown:
		return fmt.Sprintf("static NodePool %q is scaling down to %d replicas", w.NodePool, w.Count)
	case WhyStaticAtLimit:
		return fmt.Sprintf("static NodePool %q is at its limits.nodes %d: the replacement would exceed it", w.NodePool, w.Count)
	case WhyStaticNoInstanceType:
		return fmt.Sprintf("static NodePool %q offers no instance type its requirements admit", w.NodePool)
	}
	return string(w.Kind)
}

// noBudget is WhyNoBudget for pool and reason.
func noBudget(pool string, reason Reason) Why {
	return Why{Kind: WhyNoBudget, NodePool: pool, Budget: reason}
}
