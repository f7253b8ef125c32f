package statuspage

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
	"github.com/joiner-dev/joiner/pkg/scheduling/lowerbound"
)

// Input is what one picture is drawn from.
type Input struct {
	// Title heads the page (the cluster's name, or the simulated input's).
	Title string
	// Subtitle says where the picture comes from.
	Subtitle string
	// Snapshot holds the nodes (with the pods bound or nominated to them)
	// and the pending pods, as the provisioner plans on them.
	Snapshot *scheduling.Snapshot
	// InstanceTypes price the existing nodes, by NodePool; nil uses the
	// Snapshot's. (The live provisioner passes every NodePool's types, the
	// ones it may not launch from included, so their nodes still have a
	// price.)
	InstanceTypes map[string][]*scheduling.InstanceType
	// Plan is what the solver decided for the Snapshot's pending pods:
	// simulate's whole plan, or only the provisioner's last verdicts
	// (Unschedulable) for the live page. nil: no verdict known yet.
	Plan *scheduling.Plan
	// Skipped names NodePools the provisioner could not use, with why.
	Skipped map[string]string
	// Buffers are where the CapacityBuffers hold their room (the
	// controller's capacitybuffer.Store; a simulation's plan). Their
	// virtual pods, among the Snapshot's pods, are shown here rather than
	// as pending pods.
	Buffers []capacitybuffer.Room
	// History are earlier cost samples, oldest first; the picture's own
	// sample is appended to them.
	History []Sample
	// Notes are shown as they are.
	Notes []string
	// Refresh, when positive, makes the page reload itself this often.
	Refresh time.Duration
}

// View is the picture, ready to render: every number computed, every list
// ordered. Its fields are what the template reads and the tests assert.
type View struct {
	Title    string
	Subtitle string
	// Now is the Snapshot's time.
	Now     time.Time
	Refresh time.Duration
	Summary Summary
	Nodes   []Node
	Pending []PendingPod
	// Buffers are the CapacityBuffers' room, in name order.
	Buffers []Buffer
	// Cost is the cost per hour over time, oldest first.
	Cost  []Sample
	Notes []string
}

// Summary is the picture in numbers.
type Summary struct {
	Nodes int
	// PlannedNodes are the new nodes of a simulated plan.
	PlannedNodes int
	PodsRunning  int
	PodsPending  int
	// Unschedulable counts the pending pods the solver found no place for.
	Unschedulable int
	// CostPerHour is what the existing nodes cost, $/hour (nodes whose
	// offering is unknown count nothing).
	CostPerHour float64
	// PlannedCostPerHour adds the plan's new nodes to CostPerHour.
	PlannedCostPerHour float64
	// UnpricedNodes counts the nodes whose price is unknown.
	UnpricedNodes int
}

// Node is one node's row.
type Node struct {
	Name         string
	NodePool     string
	InstanceType string
	Zone         string
	CapacityType string
	// Status is one of the Status* constants.
	Status string
	// Price is the node's offering's $/hour; Priced is false when unknown.
	Price  float64
	Priced bool
	// Pods counts the pods bound to the node (DaemonSet pods included).
	Pods int
	// Incoming counts the pods nominated or planned to it, not yet bound.
	Incoming int
	// BufferChunks counts the CapacityBuffer chunks whose room the node
	// holds.
	BufferChunks int
	CPU          Usage
	Memory       Usage
}

// Buffer is one CapacityBuffer's row: its chunks and where they are held.
type Buffer struct {
	// Buffer is namespace/name.
	Buffer string
	Chunks int32
	// Held counts the chunks placed (on nodes, NodeClaims, new capacity).
	Held int
	// Places name where, with their NodePool and chunks.
	Places []BufferPlace
	// Short counts the chunks that fit nowhere, Why is why.
	Short int
	Why   string
	// Cut says what made the buffer fewer chunks than asked (quota,
	// limits), "" when nothing did.
	Cut string
	// Planned is false until a provisioning pass planned the chunks.
	Planned bool
}

// BufferPlace is one node or NodeClaim holding a buffer's chunks.
type BufferPlace struct {
	Where    string
	NodePool string
	Chunks   int
}

// Node statuses.
const (
	// StatusReady is an initialized node.
	StatusReady = "ready"
	// StatusLaunching is a NodeClaim on its way: launching, registering or
	// initializing.
	StatusLaunching = "launching"
	// StatusDeleting is a node being deleted or marked for deletion.
	StatusDeleting = "deleting"
	// StatusPlanned is a node a simulated plan would launch.
	StatusPlanned = "planned"
)

// Usage is one resource of one node: how much of its allocatable the bound
// pods request, and how much more the pods on their way do.
type Usage struct {
	// Bound and Incoming are requests, Allocatable the node's, all in the
	// resource's base unit (cores, bytes).
	Bound       float64
	Incoming    float64
	Allocatable float64
	// BoundPercent and IncomingPercent are the bar's two fills, in percent
	// of Allocatable, clamped so that they add up to at most 100.
	BoundPercent    float64
	IncomingPercent float64
	// Text is the bar's label, e.g. "1.5 / 2 cores (75%)".
	Text string
}

// PendingPod is one pending pod with the verdict on it.
type PendingPod struct {
	// Pod is namespace/name.
	Pod string
	// Verdict is one of the Verdict* constants.
	Verdict string
	// Target is the node or NodeClaim a nominated or placed pod goes to,
	// or the planned node's description.
	Target string
	// Reasons are why the pod fits nowhere, one per NodePool (existing
	// nodes first), for VerdictUnschedulable.
	Reasons []Reason
}

// Verdicts on a pending pod.
const (
	// VerdictNominated: the provisioner chose a node or NodeClaim for it.
	VerdictNominated = "nominated"
	// VerdictPlaced: a simulated plan puts it on an existing node.
	VerdictPlaced = "placed"
	// VerdictNewNode: a simulated plan launches a new node for it.
	VerdictNewNode = "new node"
	// VerdictUnschedulable: the solver found no place for it.
	VerdictUnschedulable = "unschedulable"
	// VerdictWaiting: no batch has planned it yet.
	VerdictWaiting = "waiting"
)

// Reason is one of the solver's typed reasons on one pod.
type Reason struct {
	// Where is "existing nodes" or `nodepool "name"`.
	Where   string
	Kind    scheduling.ReasonKind
	Message string
}

// Sample is the cost at one moment.
type Sample struct {
	At          time.Time
	CostPerHour float64
	Nodes       int
	// Label names the point when time is not its meaning (a plan's
	// "now" and "after the plan"); "" shows At.
	Label string
}

// Build computes the View of in.
func Build(in Input) View {
	snap := in.Snapshot
	if snap == nil {
		snap = &scheduling.Snapshot{}
	}
	prices := in.InstanceTypes
	if prices == nil {
		prices = snap.InstanceTypes
	}
	v := View{Title: in.Title, Subtitle: in.Subtitle, Now: snap.Now, Refresh: in.Refresh, Notes: slices.Clone(in.Notes)}
	plan := in.Plan
	if plan == nil {
		plan = &scheduling.Plan{}
	}

	// Pods the plan puts on existing nodes arrive there.
	arriving := map[string][]*corev1.Pod{}
	for _, e := range plan.Existing {
		arriving[e.Node] = append(arriving[e.Node], e.Pods...)
	}
	for _, en := range snap.Nodes {
		n := existingNode(en, prices, arriving[en.Name], plan.ListPrices)
		v.Nodes = append(v.Nodes, n)
		v.Summary.Nodes++
		v.Summary.PodsRunning += n.Pods
		if n.Priced {
			v.Summary.CostPerHour += n.Price
		} else {
			v.Summary.UnpricedNodes++
		}
		for _, p := range en.Pods {
			if p.Spec.NodeName == "" && !pods.IsOwnedByDaemonSet(p) {
				v.Pending = append(v.Pending, PendingPod{Pod: podName(p), Verdict: VerdictNominated, Target: nominee(en)})
			}
		}
	}
	v.Summary.PlannedCostPerHour = v.Summary.CostPerHour
	for i, nc := range plan.NewNodeClaims {
		n := plannedNode(i, nc, plan.ListPrices)
		v.Nodes = append(v.Nodes, n)
		v.Summary.PlannedNodes++
		v.Summary.PlannedCostPerHour += n.Price
	}
	slices.SortStableFunc(v.Nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(statusOrder(a.Status), statusOrder(b.Status)), cmp.Compare(a.NodePool, b.NodePool), compareNodeNames(a.Name, b.Name))
	})

	v.Pending = append(v.Pending, verdicts(slices.DeleteFunc(slices.Clone(snap.Pods), pods.IsVirtual), plan)...)
	v.Buffers = buffers(in.Buffers)
	held := map[string]int{}
	for _, b := range in.Buffers {
		if b.Plan == nil {
			continue
		}
		for _, p := range b.Plan.Places {
			if !p.New {
				held[p.Node] += p.Chunks
			}
		}
	}
	for i := range v.Nodes {
		v.Nodes[i].BufferChunks = held[v.Nodes[i].Name]
	}
	slices.SortStableFunc(v.Pending, func(a, b PendingPod) int {
		return cmp.Or(cmp.Compare(verdictOrder(a.Verdict), verdictOrder(b.Verdict)), cmp.Compare(a.Pod, b.Pod))
	})
	v.Summary.PodsPending = len(v.Pending)
	for _, p := range v.Pending {
		if p.Verdict == VerdictUnschedulable {
			v.Summary.Unschedulable++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Skipped)) {
		v.Notes = append(v.Notes, fmt.Sprintf("nodepool %q cannot launch nodes: %s", name, in.Skipped[name]))
	}
	if v.Summary.UnpricedNodes > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d node(s) have no known price (not launched yet, or an offering no NodePool lists) and count nothing in the cost", v.Summary.UnpricedNodes))
	}

	v.Cost = append(slices.Clone(in.History), Sample{At: snap.Now, CostPerHour: v.Summary.CostPerHour, Nodes: v.Summary.Nodes})
	if len(plan.NewNodeClaims) > 0 && len(in.History) == 0 {
		// A plan has no history: its chart is the step it would take.
		v.Cost[0].Label = "now"
		v.Cost = append(v.Cost, Sample{At: snap.Now, CostPerHour: v.Summary.PlannedCostPerHour, Nodes: v.Summary.Nodes + v.Summary.PlannedNodes, Label: "after the plan"})
	}
	return v
}

// buffers are the rows of the buffers' room.
func buffers(rooms []capacitybuffer.Room) []Buffer {
	out := make([]Buffer, 0, len(rooms))
	for _, r := range rooms {
		b := Buffer{Buffer: r.Buffer, Chunks: r.Chunks, Cut: strings.Join(slices.DeleteFunc([]string{r.Quota, r.Limits}, func(s string) bool { return s == "" }), "; ")}
		if o := r.Plan; o != nil {
			b.Planned, b.Held, b.Short, b.Why = true, o.Existing+o.New, o.Failed, o.Why
			if b.Why == "" {
				var why []string
				for _, pool := range slices.Sorted(maps.Keys(o.Short)) {
					why = append(why, fmt.Sprintf("nodepool %q: %s", pool, o.Short[pool]))
				}
				b.Why = strings.Join(why, "; ")
			}
			for _, p := range o.Places {
				b.Places = append(b.Places, BufferPlace{Where: p.String(), NodePool: p.NodePool, Chunks: p.Chunks})
			}
		}
		out = append(out, b)
	}
	return out
}

// SampleOf is the cost sample of the snapshot in in, without the rest of
// the picture (the live server's sampler).
func SampleOf(in Input) Sample {
	v := Build(Input{Snapshot: in.Snapshot, InstanceTypes: in.InstanceTypes})
	return v.Cost[len(v.Cost)-1]
}

// existingNode is the row of a node the snapshot holds; arriving are the
// pods a plan places on it. Its price is what it costs with the pods bound
// to it, by the solver's price model (list prices alone with listPrices).
func existingNode(en *scheduling.ExistingNode, prices map[string][]*scheduling.InstanceType, arriving []*corev1.Pod, listPrices bool) Node {
	n := Node{
		Name:         en.Name,
		NodePool:     en.NodePool,
		InstanceType: en.Labels[corev1.LabelInstanceTypeStable],
		Zone:         en.Labels[corev1.LabelTopologyZone],
		CapacityType: en.Labels[v1.LabelCapacityType],
		Status:       StatusLaunching,
	}
	switch {
	case en.MarkedForDeletion:
		n.Status = StatusDeleting
	case en.Initialized:
		n.Status = StatusReady
	}
	var bound, incoming []*corev1.Pod
	for _, p := range en.Pods {
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
			continue
		}
		incoming = append(incoming, p)
	}
	n.Price, n.Priced = nodePrice(prices, en.NodePool, n.InstanceType, n.Zone, n.CapacityType, bound, listPrices)
	incoming = append(incoming, arriving...)
	n.Pods = len(bound)
	for _, p := range incoming {
		if !pods.IsOwnedByDaemonSet(p) {
			n.Incoming++
		}
	}
	b, i := pods.SumRequests(bound), pods.SumRequests(incoming)
	n.CPU = usage(corev1.ResourceCPU, b, i, en.Allocatable)
	n.Memory = usage(corev1.ResourceMemory, b, i, en.Allocatable)
	return n
}

// plannedNode is the row of the i-th new node of a plan, sized as its
// cheapest launch option.
func plannedNode(i int, nc *scheduling.NewNodeClaim, listPrices bool) Node {
	n := Node{
		Name:         fmt.Sprintf("new node %d", i+1),
		NodePool:     nc.NodePool,
		Status:       StatusPlanned,
		Zone:         singleValue(nc.Requirements, corev1.LabelTopologyZone),
		CapacityType: singleValue(nc.Requirements, v1.LabelCapacityType),
		Incoming:     len(nc.Pods),
	}
	n.Price, n.Priced = lowerbound.NodeCost(nc, listPrices)
	if !n.Priced {
		n.Price = 0
	}
	allocatable := corev1.ResourceList{}
	if len(nc.InstanceTypes) > 0 {
		n.InstanceType = nc.InstanceTypes[0].Name
		if more := len(nc.InstanceTypes) - 1; more > 0 {
			n.InstanceType += fmt.Sprintf(" (or %d other types)", more)
		}
		allocatable = nc.InstanceTypes[0].Allocatable()
	}
	n.CPU = usage(corev1.ResourceCPU, nil, nc.Requests, allocatable)
	n.Memory = usage(corev1.ResourceMemory, nil, nc.Requests, allocatable)
	return n
}

// verdicts is the verdict on each pending pod of the snapshot.
func verdicts(pending []*corev1.Pod, plan *scheduling.Plan) []PendingPod {
	type verdict struct {
		kind, target string
		reasons      []Reason
	}
	// Keyed by namespace/name: simulated pods may have no UID.
	byPod := map[string]verdict{}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			byPod[podName(p)] = verdict{kind: VerdictPlaced, target: e.Node}
		}
	}
	for i, nc := range plan.NewNodeClaims {
		target := fmt.Sprintf("new node %d (nodepool %s)", i+1, nc.NodePool)
		for _, p := range nc.Pods {
			byPod[podName(p)] = verdict{kind: VerdictNewNode, target: target}
		}
	}
	for _, pe := range plan.Unschedulable {
		byPod[podName(pe.Pod)] = verdict{kind: VerdictUnschedulable, reasons: reasons(pe)}
	}
	out := make([]PendingPod, 0, len(pending))
	for _, p := range pending {
		if pods.IsOwnedByDaemonSet(p) {
			continue
		}
		pp := PendingPod{Pod: podName(p), Verdict: VerdictWaiting}
		if v, ok := byPod[podName(p)]; ok {
			pp.Verdict, pp.Target, pp.Reasons = v.kind, v.target, v.reasons
		}
		out = append(out, pp)
	}
	return out
}

// reasons lists a pod's typed reasons, existing nodes first, then by
// NodePool name, each in scheduling.Message's words.
func reasons(pe scheduling.PodError) []Reason {
	var out []Reason
	if pe.Existing != nil {
		out = append(out, Reason{Where: "existing nodes", Kind: pe.Existing.Kind(), Message: scheduling.Message(pe.Existing)})
	}
	for _, name := range slices.Sorted(maps.Keys(pe.NodePools)) {
		r := pe.NodePools[name]
		out = append(out, Reason{Where: fmt.Sprintf("nodepool %q", name), Kind: r.Kind(), Message: scheduling.Message(r)})
	}
	return out
}

// nominee names where a nominated pod goes: the NodeClaim until its Node
// registers, then the Node.
func nominee(en *scheduling.ExistingNode) string {
	if en.NodeClaim != "" && en.NodeClaim == en.Name {
		return "nodeclaim/" + en.Name
	}
	return "node/" + en.Name
}

// nodePrice is what a node costs per hour carrying pods
// (scheduling.ExistingNodePrice, as the solver and consolidation price it):
// its offering from its NodePool's instance types, or any NodePool's for a
// node joiner does not manage. False when the node's offering is unknown
// (not launched yet, or no NodePool lists it).
func nodePrice(prices map[string][]*scheduling.InstanceType, nodePool, typ, zone, capacityType string, pods []*corev1.Pod, listPrices bool) (float64, bool) {
	if typ == "" {
		return 0, false
	}
	pools := []string{nodePool}
	if nodePool == "" || prices[nodePool] == nil {
		pools = slices.Sorted(maps.Keys(prices))
	}
	for _, pool := range pools {
		if p, ok := scheduling.ExistingNodePrice(prices[pool], typ, zone, capacityType, pods, listPrices); ok {
			return p.Total(), true
		}
	}
	return 0, false
}

// singleValue is the one value requirements pin key to, or "".
func singleValue(reqs []scheduling.Requirement, key string) string {
	for _, r := range reqs {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// usage is one resource's bar.
func usage(name corev1.ResourceName, bound, incoming, allocatable corev1.ResourceList) Usage {
	u := Usage{}
	if q, ok := bound[name]; ok {
		u.Bound = q.AsApproximateFloat64()
	}
	if q, ok := incoming[name]; ok {
		u.Incoming = q.AsApproximateFloat64()
	}
	if q, ok := allocatable[name]; ok {
		u.Allocatable = q.AsApproximateFloat64()
	}
	format := formatCores
	if name == corev1.ResourceMemory {
		format = formatBytes
	}
	used := u.Bound + u.Incoming
	if u.Allocatable <= 0 {
		u.Text = format(used) + " requested, allocatable unknown"
		return u
	}
	u.BoundPercent = min(100, 100*u.Bound/u.Allocatable)
	u.IncomingPercent = min(100-u.BoundPercent, 100*u.Incoming/u.Allocatable)
	u.Text = fmt.Sprintf("%s / %s (%.0f%%)", format(used), format(u.Allocatable), 100*used/u.Allocatable)
	return u
}

func formatCores(c float64) string {
	s := strconv.FormatFloat(math.Round(c*100)/100, 'f', -1, 64)
	if s == "1" {
		return "1 core"
	}
	return s + " cores"
}

func formatBytes(b float64) string {
	const gi, mi = 1 << 30, 1 << 20
	switch {
	case b >= gi:
		return fmt.Sprintf("%.1f GiB", b/gi)
	case b >= mi:
		return fmt.Sprintf("%.0f MiB", b/mi)
	}
	return fmt.Sprintf("%.0f B", b)
}

func statusOrder(s string) int {
	return slices.Index([]string{StatusReady, StatusLaunching, StatusPlanned, StatusDeleting}, s)
}

func verdictOrder(v string) int {
	return slices.Index([]string{VerdictUnschedulable, VerdictWaiting, VerdictNominated, VerdictPlaced, VerdictNewNode}, v)
}

// compareNodeNames orders "new node 2" before "new node 10".
func compareNodeNames(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
