package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/schedulerconfig"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Reason is why nodes are disrupted, as NodePool budgets name it. It is the
// API's DisruptionReason, so a budget's reasons and a command's reason are
// the same values.
type Reason = v1.DisruptionReason

// The reasons budgets can be scoped to.
const (
	ReasonEmpty         Reason = v1.DisruptionReasonEmpty
	ReasonDrifted       Reason = v1.DisruptionReasonDrifted
	ReasonUnderutilized Reason = v1.DisruptionReasonUnderutilized
)

// Method is the disruption method that produced a command, with
// Karpenter's names (they label metrics as consolidation_type / decision).
type Method string

// The methods, in the order Decide tries them.
const (
	MethodEmptiness  Method = "emptiness"
	MethodDrift      Method = "drift"
	MethodMultiNode  Method = "multi-node-consolidation"
	MethodSingleNode Method = "single-node-consolidation"
	// MethodStaticDrift replaces a static NodePool's drifted node with a
	// fresh one from its template (Karpenter's StaticDrift).
	MethodStaticDrift Method = "static-drift"
)

// Node is one managed node as the controller observed it.
type Node struct {
	// Name equals the scheduling.ExistingNode.Name of the same node in
	// Input.Cluster (the Node name, or the NodeClaim name while no Node
	// has registered).
	Name string
	// Node is nil while the NodeClaim has no registered Node.
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// NodePool is the owning NodePool; "" for a standalone NodeClaim, which
	// is never voluntarily disrupted.
	NodePool string
	// Pods are every pod bound to the node, daemon and mirror pods
	// included.
	Pods []*corev1.Pod
	// InstanceType, Zone and CapacityType identify the node's offering;
	// consolidation needs all three to price a replacement.
	InstanceType, Zone, CapacityType string
	// Price is $/h of the node's current offering; 0 when unknown, which
	// makes the node Unconsolidatable.
	Price float64
	// Initialized, Deleting, Nominated and NotReady are the state
	// Karpenter's candidate rules look at: Nominated means the provisioner
	// expects pending pods to land on the node.
	Initialized, Deleting, Nominated, NotReady bool
	// Disrupting is true for a node already tainted karpenter.sh/disrupted
	// or queued by an earlier command; it counts against budgets.
	Disrupting bool
}

// Input is everything Decide and Validate look at. The engine never
// mutates it.
type Input struct {
	// Now is the decision's clock (budgets' schedules, consolidateAfter,
	// do-not-disrupt durations, remaining lifetime).
	Now time.Time
	// Cluster is the live model's snapshot of the whole cluster: every
	// node and in-flight NodeClaim (candidates included) with their pods,
	// the pending pods, NodePools with limits/InUse, their instance types
	// and offerings, DaemonSets, volumes. Built by pkg/livemodel, the
	// adapter the provisioner plans on too.
	Cluster *scheduling.Snapshot
	// Nodes are the managed nodes, candidates or not.
	Nodes []Node
	// NodePools holds the disruption spec (policy, consolidateAfter,
	// budgets, expireAfter) by name.
	NodePools map[string]*v1.NodePool
	// PDBs are every PodDisruptionBudget; their status.disruptionsAllowed
	// and selector decide whether a pod may be evicted.
	PDBs []*policyv1.PodDisruptionBudget
	// InstanceTypes are every NodePool's instance types, those the solver
	// may not launch from included: a static NodePool's drift
	// replacements are built from them.
	InstanceTypes map[string][]*scheduling.InstanceType
	// PausedDrift names the NodePools whose drift the controller stopped
	// (their replacements failed to initialise), with why; the engine
	// issues no drift command for their nodes and says so in verdicts.
	PausedDrift map[string]string
	// Options are the operator's disruption settings.
	Options Options
}

// Options are the settings that change decisions.
type Options struct {
	// SpotToSpot enables spot-to-spot consolidation (the
	// SpotToSpotConsolidation feature gate).
	SpotToSpot bool
	// MinSavingsFraction is the least share of the candidates' price a
	// replacement must save, so a command is worth its evictions
	// (CONSOLIDATION_MIN_SAVINGS, default DefaultMinSavingsFraction).
	// Zero means the default; a negative value means any strictly cheaper
	// replacement.
	MinSavingsFraction float64
	// MultiNodeMax caps the candidates of one multi-node command (0: the
	// engine's default, still bounded by budgets).
	MultiNodeMax int
	// Scheduling are the operator's solver settings (PREFERENCE_POLICY,
	// MIN_VALUES_POLICY); the simulation adds RequirePreferences unless
	// preferences are ignored altogether.
	Scheduling scheduling.Options
	// Scoring is how kube-scheduler ranks the nodes a pod fits, by
	// scheduler name (SCHEDULER_CONFIG's profiles): the replay of a
	// consolidation command places the evicted pods with it (realise.go).
	// A scheduler it does not name scores as kube-scheduler's defaults.
	Scoring map[string]schedulerconfig.Scoring
	// Solve is the solver consolidation simulates with; nil means
	// scheduling.Solve.
	Solve func(*scheduling.Snapshot, scheduling.Options) (*scheduling.Plan, error)
	// solved counts the simulations when set (the benchmark's figure,
	// export_test.go's CountSolves), whichever solver runs them.
	solved *int
}

// DefaultMinSavingsFraction is the default Options.MinSavingsFraction.
const DefaultMinSavingsFraction = 0.05

// Command is one disruption action: delete the candidates, launching the
// replacements first when there are any.
type Command struct {
	Method Method
	Reason Reason
	// Candidates are Node names (Input.Nodes[i].Name).
	Candidates []string
	// Replacements are the NodeClaims to launch and wait for before the
	// candidates are deleted; empty for a delete.
	Replacements []*scheduling.NewNodeClaim
	// SavingsPerHour is the candidates' price minus the replacements'.
	SavingsPerHour float64
	// PodsMoved counts the reschedulable pods the command evicts.
	PodsMoved int
	// Moves says where the simulation behind the command put each evicted
	// pod (for simulate's dry run and explain; the kube-scheduler makes the
	// real choice).
	Moves []Move
	// steps are the consolidation commands a composed command is made of,
	// in order (compose.go); Validate re-simulates each. nil for a command
	// of one step.
	steps []*Command
}

// Move is one evicted pod and where the simulation placed it.
type Move struct {
	Pod *corev1.Pod
	// From is the candidate the pod leaves.
	From string
	// To is the existing node it lands on; "" when it lands on
	// Replacements[Replacement].
	To          string
	Replacement int
}

// Verdict is why a node is or is not a disruption candidate now, in
// Karpenter's wording, for events, `joiner explain` and simulate.
type Verdict struct {
	Node string
	// NodePool is the node's NodePool ("" for standalone NodeClaims).
	NodePool string
	// Candidate is true when some method may consider the node now.
	Candidate bool
	// Blocked is Karpenter's DisruptionBlocked reason when a node- or
	// pod-level rule forbids disrupting the node, e.g.
	// `pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ns/name)`.
	Blocked Why
	// Unconsolidatable is Karpenter's Unconsolidatable reason when
	// nothing blocks the node but emptiness and consolidation may not take
	// it (consolidation disabled, not quiet for consolidateAfter, ...) or
	// when the simulation found no cheaper arrangement for it (`can't
	// replace with a cheaper node`).
	Unconsolidatable Why
	// Drifted is the NodeClaim's Drifted condition; Drift says why the
	// drift method leaves a drifted node alone, zero when it may replace
	// it.
	Drifted bool
	Drift   Why
	// Empty: the node runs no pod that would need another node.
	Empty bool
	// Ownerless names (namespace/name) the node's pods that have no
	// controller owner and would be evicted: nothing recreates them, so
	// disrupting the node deletes them for good. Like Karpenter v1 they do
	// not block the node; the controller warns about them (event
	// OwnerlessPods) and explain shows them.
	Ownerless []string
	// DisruptionCost is the evicted pods' cost times the node's remaining
	// lifetime share (candidates are ranked by it against their price).
	DisruptionCost float64
	// Price is the node's $/h.
	Price float64
	// Command is the method of the Decision's command when it takes the
	// node, "" otherwise.
	Command Method
}

// Hold is the reason that governs v: Blocked, else Unconsolidatable, else
// Drift; zero when nothing holds the node.
func (v *Verdict) Hold() Why {
	for _, w := range []Why{v.Blocked, v.Unconsolidatable, v.Drift} {
		if !w.IsZero() {
			return w
		}
	}
	return Why{}
}

// Decision is the outcome of one Decide pass.
type Decision struct {
	// Command is nil when no method yields a command.
	Command *Command
	// Verdicts has one entry per Input.Nodes element, in the same order.
	Verdicts []Verdict
	// Allowed is the budget left per NodePool per reason at Now.
	Allowed map[string]map[Reason]int
}
