package capacitybuffer

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Room is where one buffer holds its room, as the controller publishes it
// (the controller view, the status page): the chunks it resolved to, what
// cut their number, and where the last provisioning pass put them.
type Room struct {
	// Buffer is namespace/name.
	Buffer string `json:"buffer"`
	// Chunks is the chunk count in force (status.replicas).
	Chunks int32 `json:"chunks"`
	// Quota and Limits say what cut Chunks below what the spec asks
	// (Count's), "" when nothing did.
	Quota  string `json:"quota,omitempty"`
	Limits string `json:"limits,omitempty"`
	// Plan is where the last pass put the chunks; nil until a pass planned
	// them.
	Plan *Outcome `json:"plan,omitempty"`
}

// Place is one node or NodeClaim holding chunks of a buffer.
type Place struct {
	NodePool string `json:"nodePool,omitempty"`
	// Node is the existing node's name (an in-flight NodeClaim's own name
	// until its Node registers: scheduling.ExistingNode.Name); "" for a
	// NodeClaim the plan launches.
	Node string `json:"node,omitempty"`
	// NodeClaim is the NodeClaim behind the node, or the one created for a
	// new place ("" when none was created, as in a simulation).
	NodeClaim string `json:"nodeClaim,omitempty"`
	// New is a NodeClaim the pass launched; Index is its place among the
	// plan's new NodeClaims, from 1.
	New   bool `json:"new,omitempty"`
	Index int  `json:"index,omitempty"`
	// Chunks counts the buffer's chunks held there.
	Chunks int `json:"chunks"`
}

// String names the place as every reader shows it: "node N", "node N
// (nodeclaim C)" when the names differ, "new nodeclaim C (launching)", or
// "new node #i" in a plan that created none.
func (p Place) String() string {
	switch {
	case p.New && p.NodeClaim != "":
		return "new nodeclaim " + p.NodeClaim + " (launching)"
	case p.New:
		return fmt.Sprintf("new node #%d", p.Index)
	case p.NodeClaim != "" && p.NodeClaim != p.Node:
		return "node " + p.Node + " (nodeclaim " + p.NodeClaim + ")"
	}
	return "node " + p.Node
}

// In is the part of r held in nodePool: its places there, and the chunks
// that fit nowhere with why they do not fit that NodePool ("" when the
// plan gave no reason for it).
func (r Room) In(nodePool string) (places []Place, short int, why string) {
	if r.Plan == nil {
		return nil, 0, ""
	}
	for _, p := range r.Plan.Places {
		if p.NodePool == nodePool {
			places = append(places, p)
		}
	}
	if why, ok := r.Plan.Short[nodePool]; ok {
		return places, r.Plan.Failed, why
	}
	return places, 0, ""
}

// Held counts the chunks among places.
func Held(places []Place) int {
	n := 0
	for _, p := range places {
		n += p.Chunks
	}
	return n
}

// Summary is the room in one line: where the chunks are, and why some are
// missing.
func (r Room) Summary() string {
	if r.Plan == nil {
		return fmt.Sprintf("%d chunk(s); no provisioning pass has planned them yet", r.Chunks)
	}
	o := r.Plan
	var parts []string
	if len(o.Places) > 0 {
		names := make([]string, 0, len(o.Places))
		for _, p := range o.Places {
			names = append(names, fmt.Sprintf("%s: %d", p, p.Chunks))
		}
		parts = append(parts, fmt.Sprintf("%d of %d chunk(s) held on %s", o.Existing+o.New, r.Chunks, strings.Join(names, ", ")))
	}
	if o.New > 0 {
		parts = append(parts, fmt.Sprintf("%d on capacity being launched", o.New))
	}
	if o.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d short: they fit no node and no NodePool (%s)", o.Failed, o.Why))
	}
	for _, cut := range slices.DeleteFunc([]string{r.Quota, r.Limits}, func(s string) bool { return s == "" }) {
		parts = append(parts, "fewer chunks than asked: "+cut)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d chunk(s)", r.Chunks)
	}
	return strings.Join(parts, "; ")
}

// Rooms are the room of each resolved buffer that plans chunks, as a
// plan's outcomes place them (a simulation's: the controller's Store keeps
// its own).
func Rooms(resolved []Resolution, outcomes map[types.NamespacedName]*Outcome) []Room {
	var out []Room
	for _, res := range resolved {
		if res.NotReady != "" || res.Count.Chunks == 0 {
			continue
		}
		out = append(out, Room{Buffer: res.Buffer.String(), Chunks: res.Count.Chunks, Quota: res.Count.Quota, Limits: res.Count.Limits, Plan: outcomes[res.Buffer]})
	}
	return out
}
