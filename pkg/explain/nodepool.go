package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/disruption"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// NodePoolVerdict is what a NodePool has left and whether it can launch.
type NodePoolVerdict struct {
	NodePool string `json:"nodePool"`
	// Ready is the NodePool's Ready condition.
	Ready ConditionSummary `json:"ready"`
	// NodeClass is its node class and that class's readiness.
	NodeClass NodeClassSummary `json:"nodeClass"`
	// Nodes counts the NodeClaims it owns.
	Nodes int `json:"nodes"`
	// Replicas is spec.replicas of a static NodePool (nil for a dynamic
	// one): its node count, kept by the static controller whatever the
	// pending pods, never consolidated.
	Replicas *int64 `json:"replicas,omitempty"`
	// Limits are spec.limits with what is used and left.
	Limits []LimitSummary `json:"limits,omitempty"`
	// Budgets are the disruptions its budgets allow now, per reason.
	Budgets []BudgetSummary `json:"budgets"`
	// InstanceTypes counts the types offered to it and those its
	// requirements keep (with an available offering).
	InstanceTypes InstanceTypeSummary `json:"instanceTypes"`
	// Backoffs are its launch back-offs in force now (pkg/launchhealth),
	// as the provisioner reads them: their instance types cannot launch
	// until NextAttempt.
	Backoffs []scheduling.LaunchBackoff `json:"backoffs,omitempty"`
	// Buffers are the CapacityBuffers holding room in it, or short of
	// room it cannot give, as the controller published them (its view).
	Buffers []BufferRoomSummary `json:"buffers,omitempty"`
	// BufferSource says why Buffers may be incomplete: the cluster has
	// CapacityBuffers but no controller view says where their room is.
	BufferSource string `json:"bufferSource,omitempty"`
	// InstanceTypeSource says where the instance types come from
	// (Snapshot.InstanceTypeSource).
	InstanceTypeSource string         `json:"instanceTypeSource,omitempty"`
	Events             []EventSummary `json:"events,omitempty"`
	Summary            string         `json:"summary"`
}

// BufferRoomSummary is the room one CapacityBuffer holds in a NodePool.
type BufferRoomSummary struct {
	// Buffer is namespace/name.
	Buffer string `json:"buffer"`
	// Chunks is the buffer's chunk count; Held how many of them the
	// NodePool's nodes and NodeClaims hold.
	Chunks int32 `json:"chunks"`
	Held   int   `json:"held"`
	// Places are the nodes and NodeClaims holding them.
	Places []capacitybuffer.Place `json:"places,omitempty"`
	// Short counts the buffer's chunks that fit nowhere, Why is why they
	// do not fit this NodePool (its limits, no instance type, ...).
	Short int    `json:"short,omitempty"`
	Why   string `json:"why,omitempty"`
	// Room is the whole buffer's room in one line (capacitybuffer.Room).
	Room string `json:"room"`
}

// ConditionSummary is one condition, or Found=false.
type ConditionSummary struct {
	Found   bool   `json:"found"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// NodeClassSummary names a node class and its readiness.
type NodeClassSummary struct {
	Kind  string           `json:"kind"`
	Name  string           `json:"name"`
	Found bool             `json:"found"`
	Ready ConditionSummary `json:"ready"`
}

// LimitSummary is one resource of spec.limits.
type LimitSummary struct {
	Resource corev1.ResourceName `json:"resource"`
	Limit    resource.Quantity   `json:"limit"`
	Used     resource.Quantity   `json:"used"`
	Left     resource.Quantity   `json:"left"`
}

// BudgetSummary is how many nodes may be disrupted now for Reason.
type BudgetSummary struct {
	Reason  v1.DisruptionReason `json:"reason"`
	Allowed int                 `json:"allowed"`
}

// InstanceTypeSummary counts instance types.
type InstanceTypeSummary struct {
	Offered int `json:"offered"`
	// Compatible meet the requirements and have an available offering in
	// the zones and capacity types they allow.
	Compatible int `json:"compatible"`
	// Cheapest are up to five compatible types, cheapest first.
	Cheapest []string `json:"cheapest,omitempty"`
	// BackingOff counts the compatible types a back-off keeps from
	// launching now.
	BackingOff int `json:"backingOff,omitempty"`
}

// NodePool explains the NodePool name.
func NodePool(s *Snapshot, name string) (*NodePoolVerdict, error) {
	np := s.nodePool(name)
	if np == nil {
		return nil, fmt.Errorf("nodepool %q not found", name)
	}
	v := &NodePoolVerdict{NodePool: name, Ready: summarize(condition(np.Status.Conditions, v1.ConditionTypeReady))}
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		v.NodeClass = NodeClassSummary{Kind: ref.Kind, Name: ref.Name}
		if nc := s.nodeClass(ref); nc != nil {
			v.NodeClass.Found, v.NodeClass.Ready = true, summarize(nc.Ready)
		}
	}
	for _, nc := range s.NodeClaims {
		if nc.Labels[v1.LabelNodePool] == name {
			v.Nodes++
		}
	}
	v.Replicas = np.Spec.Replicas
	var pool *scheduling.NodePool
	for _, p := range s.Scheduling.NodePools {
		if p.Name == name {
			pool = p
		}
	}
	used := np.Status.Resources
	if len(used) == 0 && pool != nil {
		used = pool.InUse
	}
	for _, r := range sortedKeys(np.Spec.Limits) {
		l := LimitSummary{Resource: r, Limit: np.Spec.Limits[r]}
		if r == "nodes" {
			l.Used = *resource.NewQuantity(int64(v.Nodes), resource.DecimalSI)
		} else if q, ok := used[r]; ok {
			l.Used = q
		}
		l.Left = l.Limit.DeepCopy()
		l.Left.Sub(l.Used)
		v.Limits = append(v.Limits, l)
	}
	allowed := disruption.AllowedDisruptions(s.Disruption)[name]
	for _, r := range v1.DisruptionReasons {
		v.Budgets = append(v.Budgets, BudgetSummary{Reason: r, Allowed: allowed[r]})
	}
	if pool != nil {
		for _, b := range pool.Backoffs {
			if s.Now.Before(b.NextAttempt) {
				v.Backoffs = append(v.Backoffs, b)
			}
		}
		v.InstanceTypes = compatibleTypes(pool, s.Scheduling.InstanceTypes[name], v.Backoffs)
	}
	v.Buffers, v.BufferSource = bufferRooms(s, name)
	v.InstanceTypeSource = s.InstanceTypeSource
	// The node class's events too: what it says (a namesake cluster, an
	// unready subnet) is why the pool's nodes fail.
	objs := []ref{{"NodePool", "", name}}
	if v.NodeClass.Name != "" {
		objs = append(objs, ref{v.NodeClass.Kind, "", v.NodeClass.Name})
	}
	v.Events = s.eventsAbout(s.Now, objs...)
	v.Summary = poolSummary(v)
	return v, nil
}

// bufferRooms are the buffers holding room in nodePool or short of room
// there, from the controller view; source says why there may be more.
func bufferRooms(s *Snapshot, nodePool string) (out []BufferRoomSummary, source string) {
	if s.View == nil || len(s.View.Buffers) == 0 {
		if len(s.Buffers) > 0 {
			source = fmt.Sprintf("the cluster has %d CapacityBuffer(s), but no controller view says where their room is (the controller publishes it with --feature-gates=CapacityBuffer=true)", len(s.Buffers))
		}
		return nil, source
	}
	for _, r := range s.View.Buffers {
		places, short, why := r.In(nodePool)
		if len(places) == 0 && short == 0 {
			continue
		}
		out = append(out, BufferRoomSummary{Buffer: r.Buffer, Chunks: r.Chunks, Held: capacitybuffer.Held(places), Places: places, Short: short, Why: why, Room: r.Summary()})
	}
	return out, ""
}

// compatibleTypes counts the types whose labels every requirement of the
// pool admits and that have an available offering it allows.
func compatibleTypes(pool *scheduling.NodePool, its []*scheduling.InstanceType, backoffs []scheduling.LaunchBackoff) InstanceTypeSummary {
	type priced struct {
		name  string
		price float64
	}
	var ok []priced
	for _, it := range its {
		if !admitsLabels(pool, it) {
			continue
		}
		if price, found := cheapestAllowed(pool, it); found {
			ok = append(ok, priced{it.Name, price})
		}
	}
	sort.SliceStable(ok, func(i, j int) bool {
		return ok[i].price < ok[j].price || (ok[i].price == ok[j].price && ok[i].name < ok[j].name)
	})
	out := InstanceTypeSummary{Offered: len(its), Compatible: len(ok)}
	var launchable []string
	for _, p := range ok {
		if slices.ContainsFunc(backoffs, func(b scheduling.LaunchBackoff) bool { return slices.Contains(b.InstanceTypes, p.name) }) {
			out.BackingOff++
			continue
		}
		launchable = append(launchable, p.name)
	}
	out.Cheapest = launchable[:min(len(launchable), 5)]
	return out
}

// typeAllowed: every requirement of the pool admits the type's labels,
// and it has an available offering the pool allows.
func typeAllowed(pool *scheduling.NodePool, it *scheduling.InstanceType) bool {
	if !admitsLabels(pool, it) {
		return false
	}
	_, found := cheapestAllowed(pool, it)
	return found
}

// admitsLabels: every requirement of the pool admits the type's labels.
func admitsLabels(pool *scheduling.NodePool, it *scheduling.InstanceType) bool {
	return !slices.ContainsFunc(pool.Requirements, func(r scheduling.Requirement) bool {
		return !v1.RequirementAdmitsAny(r.Operator, r.Values, it.Requirements[r.Key])
	})
}

// cheapestAllowed is the lowest price of the type's available offerings in
// the zones and capacity types the pool allows.
func cheapestAllowed(pool *scheduling.NodePool, it *scheduling.InstanceType) (float64, bool) {
	o, ok := scheduling.CheapestOffering(it, pool.Requirements)
	return o.Price, ok
}

func poolSummary(v *NodePoolVerdict) string {
	var problems []string
	if v.Ready.Found && v.Ready.Status != "True" {
		problems = append(problems, fmt.Sprintf("it is not Ready (%s: %s)", v.Ready.Reason, v.Ready.Message))
	}
	switch {
	case v.NodeClass.Name == "":
		problems = append(problems, "it has no nodeClassRef")
	case !v.NodeClass.Found:
		problems = append(problems, fmt.Sprintf("its node class %s/%s does not exist", v.NodeClass.Kind, v.NodeClass.Name))
	case v.NodeClass.Ready.Status != "True":
		problems = append(problems, fmt.Sprintf("its node class %s/%s is not Ready", v.NodeClass.Kind, v.NodeClass.Name))
	}
	for _, l := range v.Limits {
		if l.Left.Sign() <= 0 {
			problems = append(problems, fmt.Sprintf("its %s limit is used up (%s of %s)", l.Resource, l.Used.String(), l.Limit.String()))
		}
	}
	if v.InstanceTypes.Compatible == 0 {
		problems = append(problems, fmt.Sprintf("none of the %d instance types offered meets its requirements with an available offering", v.InstanceTypes.Offered))
	} else if v.InstanceTypes.BackingOff == v.InstanceTypes.Compatible {
		b := v.Backoffs[0]
		for _, o := range v.Backoffs[1:] {
			if o.NextAttempt.Before(b.NextAttempt) {
				b = o
			}
		}
		problems = append(problems, fmt.Sprintf("it is backing off launches that failed: %s failed %s %d time(s) in a row (%s), next attempt at %s",
			b.What, strings.ToLower(b.Phase), b.Failures, b.Cause, b.NextAttempt.UTC().Format(time.RFC3339)))
	}
	if len(problems) > 0 {
		return fmt.Sprintf("NodePool %s cannot launch nodes: %s.", v.NodePool, strings.Join(problems, "; "))
	}
	if v.InstanceTypes.BackingOff > 0 {
		return fmt.Sprintf("NodePool %s can launch nodes: %d instance types fit its requirements, %d of them backing off.", v.NodePool, v.InstanceTypes.Compatible, v.InstanceTypes.BackingOff)
	}
	return fmt.Sprintf("NodePool %s can launch nodes: %d instance types fit its requirements.", v.NodePool, v.InstanceTypes.Compatible)
}

func summarize(c *metav1.Condition) ConditionSummary {
	if c == nil {
		return ConditionSummary{}
	}
	return ConditionSummary{Found: true, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
}

func sortedKeys(l v1.Limits) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k := range l {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
