package disruption

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestPinLike: Validate re-simulates a composed command's steps on the
// replacements as the command launches them. A replacement the command
// launches in one zone is pinned there in the re-simulated step, so the
// steps after it count on a node of that zone, as when they were planned;
// when that zone no longer offers all of the replacement's instance types
// the command cannot launch what it planned, and the step fails. Before,
// a re-simulated replacement whose zone offered none of its types was
// returned unpinned (a node of no zone for the later steps) and the
// command passed; one whose zone offered some of them was pinned to
// those and passed too.
func TestPinLike(t *testing.T) {
	it := offeredIn
	inZone := func(z string) []scheduling.Requirement {
		return []scheduling.Requirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}
	}
	pinned := &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1"), it("b", "z1")}, Requirements: inZone("z1")}
	open := &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1", "z2"), it("b", "z1", "z2")}}
	for _, tc := range []struct {
		name  string
		want  *scheduling.NewNodeClaim // the command's replacement
		have  *scheduling.NewNodeClaim // the re-simulation's
		zones []string                 // where the re-simulated one launches; nil: refused
	}{
		{name: "its zone still offers every type: pinned there", want: pinned, have: open, zones: []string{"z1"}},
		{name: "already in its zone", want: pinned, have: &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1"), it("b", "z1")}, Requirements: inZone("z1")}, zones: []string{"z1"}},
		{name: "its zone offers none of its types", want: pinned, have: &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z2", "z3"), it("b", "z2", "z3")}}},
		{name: "its zone offers one of its two types", want: pinned, have: &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1", "z2"), it("b", "z2")}}},
		{name: "an open replacement stays open", want: open, have: open, zones: []string{"z1", "z2"}},
		// The re-simulation's own requirements (a pod's zone affinity) may
		// forbid the zone the command launches in: pinning must not widen
		// them, nor accept a node that stays elsewhere.
		{name: "its pods now forbid the zone, two others allowed", want: pinned, have: &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1", "z2", "z3"), it("b", "z1", "z2", "z3")}, Requirements: []scheduling.Requirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2", "z3"}}}}},
		{name: "its pods now forbid the zone, one other allowed", want: pinned, have: &scheduling.NewNodeClaim{NodePool: "p", InstanceTypes: []*scheduling.InstanceType{it("a", "z1", "z2"), it("b", "z1", "z2")}, Requirements: inZone("z2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pinLike(&Command{Replacements: []*scheduling.NewNodeClaim{tc.have}}, &Command{Replacements: []*scheduling.NewNodeClaim{tc.want}})
			if tc.zones == nil {
				if err == nil {
					t.Fatalf("re-simulated step accepted, launching in %v", launchZones(got.Replacements[0]))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if zones := launchZones(got.Replacements[0]); !slices.Equal(zones, tc.zones) {
				t.Fatalf("re-simulated replacement launches in %v, want %v", zones, tc.zones)
			}
		})
	}
}

// TestStillOffersMatchesZones: a re-simulation supports a command only
// when each replacement the command launches is one of the re-simulated
// plan's nodes, zone included: the same instance types planned in another
// zone (a zone-spread pod now counted elsewhere) leave the pods without
// the node the plan puts them on. Replacements of the same types in
// several zones are matched as a whole, not first come first served.
// Before, replacements matched by their types' names alone: the first
// case passed, and the last was refused (the command's z1 replacement
// took the re-simulation's z2 one, and the z2 one found none).
func TestStillOffersMatchesZones(t *testing.T) {
	it := offeredIn
	in := func(z string, types ...string) *scheduling.NewNodeClaim {
		nc := &scheduling.NewNodeClaim{NodePool: "p"}
		if z != "" {
			nc.Requirements = []scheduling.Requirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}
		}
		for _, name := range types {
			nc.InstanceTypes = append(nc.InstanceTypes, it(name, "z1", "z2", "z3"))
		}
		return nc
	}
	cmd := func(ncs ...*scheduling.NewNodeClaim) *Command { return &Command{Replacements: ncs} }
	for _, tc := range []struct {
		name      string
		now, want *Command
		match     []int // nil: refused
	}{
		{name: "same types, now planned in another zone", now: cmd(in("z2", "a")), want: cmd(in("z1", "a"))},
		{name: "same types, same zone", now: cmd(in("z1", "a", "b")), want: cmd(in("z1", "a")), match: []int{0}},
		{name: "open now, pinned in the command", now: cmd(in("", "a")), want: cmd(in("z1", "a")), match: []int{0}},
		{name: "pinned now, open in the command", now: cmd(in("z1", "a")), want: cmd(in("", "a"))},
		{name: "two zones, listed the other way round", now: cmd(in("z2", "a"), in("z1", "a")), want: cmd(in("z1", "a"), in("z2", "a")), match: []int{1, 0}},
		{name: "the open one must leave the pinned one its node", now: cmd(in("", "a"), in("z1", "a")), want: cmd(in("z1", "a"), in("", "a")), match: []int{1, 0}},
		{name: "two in one zone, one now elsewhere", now: cmd(in("z1", "a"), in("z3", "a")), want: cmd(in("z1", "a"), in("z1", "a"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			match, err := matchReplacements(tc.now, tc.want)
			if tc.match == nil {
				if err == nil {
					t.Fatalf("matched %v: the command launches its replacements where the re-simulation plans none", match)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(match, tc.match) {
				t.Fatalf("matched %v, want %v", match, tc.match)
			}
		})
	}
}

// offeredIn is an instance type offered on demand, at one price, in zones.
func offeredIn(name string, zones ...string) *scheduling.InstanceType {
	out := &scheduling.InstanceType{Name: name}
	for _, z := range zones {
		out.Offerings = append(out.Offerings, scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: 0.1, Available: true})
	}
	return out
}
