package simulate

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// Solver turns a Snapshot into a Plan (scheduling.Solve with its options).
type Solver func(*scheduling.Snapshot) (*scheduling.Plan, error)

// Options says how to run a simulation.
type Options struct {
	// Solve is the solver to run.
	Solve Solver
	// Clock times the solve; clock.RealClock{} when nil.
	Clock clock.PassiveClock
	// LowerBound also computes the LP lower bound on the cost.
	LowerBound bool
	// Notes are printed with the report (for example the input objects
	// that were ignored).
	Notes []string
	// Buffers are the input's CapacityBuffers as they resolved
	// (capacitybuffer.Resolve); their virtual pods are among the
	// snapshot's pods, and the report says where the plan put them.
	Buffers []capacitybuffer.Resolution
}

// Run solves the snapshot and builds the report.
func Run(s *scheduling.Snapshot, opts Options) (*Report, error) {
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	start := c.Now()
	plan, err := opts.Solve(s)
	if err != nil {
		return nil, fmt.Errorf("solving: %w", err)
	}
	elapsed := c.Since(start)
	var bound *lowerbound.Bound
	if opts.LowerBound {
		b, err := planBound(s, plan)
		if err == nil {
			bound = &b
		} else {
			opts.Notes = append(opts.Notes, "no lower bound: "+err.Error())
		}
	}
	r := NewReport(s, plan, elapsed, bound, opts.Notes)
	r.Buffers = buffers(opts.Buffers, s, plan)
	return r, nil
}

// planBound is the LP lower bound for the pods the plan puts on new nodes,
// so unschedulable pods and pods on existing nodes do not inflate it.
func planBound(s *scheduling.Snapshot, plan *scheduling.Plan) (lowerbound.Bound, error) {
	onNew := *s
	onNew.Nodes = nil
	onNew.Pods = nil
	for _, n := range plan.NewNodeClaims {
		onNew.Pods = append(onNew.Pods, n.Pods...)
	}
	return lowerbound.Compute(&onNew, scheduling.Options{ListPrices: plan.ListPrices})
}

// Report is a plan as `joiner simulate` shows it. Its JSON form is the
// stable, machine-readable output (-o json).
type Report struct {
	Summary       Summary         `json:"summary"`
	Nodes         []Node          `json:"nodes"`
	Existing      []ExistingNode  `json:"existing"`
	Unschedulable []Unschedulable `json:"unschedulable"`
	// Buffers are the CapacityBuffers' room: their virtual pods are
	// listed on the nodes that hold them but are not counted as pods.
	Buffers []Buffer `json:"buffers,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	pools   map[string]*scheduling.NodePool
}

// Summary is the plan in numbers.
type Summary struct {
	// Nodes is the number of new nodes.
	Nodes int `json:"nodes"`
	// CostPerHour is what the new nodes cost, $/hour (see
	// lowerbound.PlanCost).
	CostPerHour float64 `json:"costPerHour"`
	// ListCostPerHour is the same nodes at their offerings' list prices
	// (what Karpenter counts): CostPerHour less credits and volumes.
	ListCostPerHour float64 `json:"listCostPerHour"`
	// ListPrices is set when the plan was priced at list prices
	// (PRICE_MODEL=List).
	ListPrices bool `json:"listPrices,omitempty"`
	// PodsScheduled counts pods placed on new and existing nodes.
	PodsScheduled int `json:"podsScheduled"`
	// PodsOnExistingNodes counts the pods placed on existing nodes.
	PodsOnExistingNodes int `json:"podsOnExistingNodes"`
	// PodsUnschedulable counts pods that fit nowhere.
	PodsUnschedulable int `json:"podsUnschedulable"`
	// SolveSeconds is how long the solver took.
	SolveSeconds float64 `json:"solveSeconds"`
	// LowerBound is the LP bound on CostPerHour, when computed.
	LowerBound *Bound `json:"lowerBound,omitempty"`
}

// Bound is the LP lower bound on the new nodes' cost.
type Bound struct {
	LPCostPerHour     float64 `json:"lpCostPerHour"`
	LPAntiCostPerHour float64 `json:"lpAntiCostPerHour"`
}

// Node is one new node.
type Node struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes are the launch options, cheapest first.
	InstanceTypes []string `json:"instanceTypes"`
	// Requirements maps each constrained label key to the values the node
	// may still take; zone and capacity type are always present, computed
	// from the available offerings the requirements allow.
	Requirements map[string][]string `json:"requirements"`
	// Price is what the node costs on its cheapest launch option, $/hour
	// (see scheduling.NodePrice): ListPrice, plus Credits (a burstable
	// type's surplus credits for the CPU its pods request above the
	// baseline) and Volumes (its EBS volumes) unless the plan is priced at
	// list prices.
	Price     float64 `json:"price"`
	ListPrice float64 `json:"listPrice"`
	Credits   float64 `json:"credits,omitempty"`
	Volumes   float64 `json:"volumes,omitempty"`
	// Requests sums the pods' requests plus DaemonSet overhead.
	Requests map[string]string `json:"requests,omitempty"`
	// Pods are namespace/name, in the plan's order.
	Pods []string `json:"pods"`
}

// ExistingNode is the pods placed on one existing node.
type ExistingNode struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

// Unschedulable is a pod that fits nowhere, with one reason per NodePool;
// the key "existingNodes" holds why no existing node fit.
type Unschedulable struct {
	Pod     string               `json:"pod"`
	Reasons map[string]Rejection `json:"reasons"`
}

// Rejection is one of the solver's typed reasons: its kind, its text (as
// pod events say it) and its detail fields.
type Rejection struct {
	Kind    scheduling.ReasonKind `json:"kind"`
	Message string                `json:"message"`
	Detail  scheduling.Reason     `json:"detail"`
}

func rejection(r scheduling.Reason) Rejection {
	return Rejection{Kind: r.Kind(), Message: scheduling.Message(r), Detail: r}
}

// ExistingNodesKey is the Reasons key for existing capacity (NodePool names
// are DNS names, so it cannot clash with one).
const ExistingNodesKey = "existingNodes"

// NewReport builds the report of a solved plan.
func NewReport(s *scheduling.Snapshot, plan *scheduling.Plan, elapsed time.Duration, bound *lowerbound.Bound, notes []string) *Report {
	r := &Report{
		Nodes:         []Node{},
		Existing:      []ExistingNode{},
		Unschedulable: []Unschedulable{},
		Notes:         notes,
		pools:         map[string]*scheduling.NodePool{},
	}
	for _, np := range s.NodePools {
		r.pools[np.Name] = np
	}
	for _, n := range plan.NewNodeClaims {
		node := Node{
			NodePool:     n.NodePool,
			Requirements: requirementValues(n),
			Price:        n.Price,
			Pods:         podNames(n.Pods),
		}
		if price, ok := lowerbound.NodeCost(n, plan.ListPrices); ok {
			node.Price = price
		}
		node.ListPrice, node.Credits, node.Volumes = n.PriceParts.List, n.PriceParts.Credits, n.PriceParts.Volumes
		for _, it := range n.InstanceTypes {
			node.InstanceTypes = append(node.InstanceTypes, it.Name)
		}
		if len(n.Requests) > 0 {
			node.Requests = map[string]string{}
			for name, q := range n.Requests {
				node.Requests[string(name)] = q.String()
			}
		}
		r.Nodes = append(r.Nodes, node)
		r.Summary.CostPerHour += node.Price
		r.Summary.ListCostPerHour += node.ListPrice
		r.Summary.PodsScheduled += len(n.Pods) - virtual(n.Pods)
	}
	for _, e := range plan.Existing {
		r.Existing = append(r.Existing, ExistingNode{Node: e.Node, Pods: podNames(e.Pods)})
		r.Summary.PodsScheduled += len(e.Pods) - virtual(e.Pods)
		r.Summary.PodsOnExistingNodes += len(e.Pods) - virtual(e.Pods)
	}
	for _, pe := range plan.Unschedulable {
		if _, ok := capacitybuffer.BufferOf(pe.Pod); ok {
			continue // in its buffer's report
		}
		u := Unschedulable{Pod: podName(pe.Pod), Reasons: map[string]Rejection{}}
		for pool, reason := range pe.NodePools {
			u.Reasons[pool] = rejection(reason)
		}
		if pe.Existing != nil {
			u.Reasons[ExistingNodesKey] = rejection(pe.Existing)
		}
		r.Unschedulable = append(r.Unschedulable, u)
	}
	r.Summary.Nodes = len(r.Nodes)
	r.Summary.ListPrices = plan.ListPrices
	r.Summary.PodsUnschedulable = len(r.Unschedulable)
	r.Summary.SolveSeconds = elapsed.Seconds()
	if bound != nil {
		r.Summary.LowerBound = &Bound{LPCostPerHour: bound.LP, LPAntiCostPerHour: bound.LPAnti}
	}
	return r
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podName(p))
	}
	return out
}

// requirementValues lists, for every key the node's requirements
// constrain, the values it may still take. Zone and capacity type come from
// the available offerings of its instance types that the requirements
// allow; other keys from the In values, or else from the values its
// instance types define that the requirements admit.
func requirementValues(n *scheduling.NewNodeClaim) map[string][]string {
	out := map[string][]string{}
	zones, capacityTypes := []string{}, []string{}
	for _, it := range n.InstanceTypes {
		for _, o := range it.Offerings {
			if !scheduling.OfferingAllowed(o, n.Requirements) {
				continue
			}
			zones = appendNew(zones, o.Zone)
			capacityTypes = appendNew(capacityTypes, o.CapacityType)
		}
	}
	slices.Sort(zones)
	slices.Sort(capacityTypes)
	out[corev1.LabelTopologyZone] = zones
	out[v1.LabelCapacityType] = capacityTypes
	for _, r := range n.Requirements {
		if _, done := out[r.Key]; done {
			continue
		}
		var values []string
		if r.Operator == corev1.NodeSelectorOpIn {
			values = slices.Clone(r.Values)
			values = slices.DeleteFunc(values, func(v string) bool { return !scheduling.RequirementsAdmit(n.Requirements, r.Key, v) })
		} else {
			for _, it := range n.InstanceTypes {
				for _, v := range it.Requirements[r.Key] {
					if scheduling.RequirementsAdmit(n.Requirements, r.Key, v) {
						values = appendNew(values, v)
					}
				}
			}
			if values == nil {
				continue // only says what the node does not have
			}
		}
		slices.SortFunc(values, compareLabelValues)
		out[r.Key] = slices.Compact(values)
	}
	return out
}

// compareLabelValues orders integers numerically and everything else as
// strings, so sizes read 2, 4, 16 rather than 16, 2, 4.
func compareLabelValues(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
