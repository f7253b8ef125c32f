package capacitybuffer_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestRoom: Outcomes names each place a plan puts a buffer's chunks (a
// node, an in-flight NodeClaim, a NodeClaim the pass launched) with its
// NodePool, and why the rest fit nowhere, per NodePool; the Store keeps
// it for the chunks in force and says which buffers a bind to a node may
// take room from.
func TestRoom(t *testing.T) {
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "room", Namespace: "team", UID: "u"}}
	vp := capacitybuffer.VirtualPods(cb, capacitybuffer.ChunkPod(cb, &corev1.PodTemplateSpec{}), 5)
	key := types.NamespacedName{Namespace: "team", Name: "room"}
	real := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}}
	snap := &scheduling.Snapshot{Nodes: []*scheduling.ExistingNode{
		{Name: "node-a", NodePool: "general", NodeClaim: "general-abc"},
		{Name: "general-def", NodePool: "general", NodeClaim: "general-def"},
	}}
	plan := &scheduling.Plan{
		Existing: []scheduling.ExistingPlacement{
			{Node: "node-a", Pods: []*corev1.Pod{real, vp[0], vp[1]}},
			{Node: "general-def", Pods: []*corev1.Pod{vp[2]}},
		},
		NewNodeClaims: []*scheduling.NewNodeClaim{{NodePool: "spot", Pods: []*corev1.Pod{vp[3]}}},
		Unschedulable: []scheduling.PodError{{Pod: vp[4], NodePools: map[string]scheduling.Reason{
			"spot": scheduling.Limit{NodePool: "spot", Resource: corev1.ResourceCPU},
		}}},
	}
	for _, tc := range []struct {
		name      string
		launched  []string
		wantPlace []string
	}{
		{name: "launched", launched: []string{"spot-xyz"}, wantPlace: []string{"node node-a (nodeclaim general-abc)", "node general-def", "new nodeclaim spot-xyz (launching)"}},
		{name: "simulated", wantPlace: []string{"node node-a (nodeclaim general-abc)", "node general-def", "new node #1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := capacitybuffer.Outcomes(snap, plan, tc.launched, func(scheduling.PodError) string { return "limits" })[key]
			if o == nil || o.Existing != 3 || o.New != 1 || o.Failed != 1 {
				t.Fatalf("outcome %+v, want 3 existing, 1 new, 1 failed", o)
			}
			var got []string
			for _, p := range o.Places {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.wantPlace) || o.Places[0].Chunks != 2 || o.Places[0].NodePool != "general" || o.Places[2].NodePool != "spot" {
				t.Fatalf("places %+v (%v), want %v with 2 chunks on node-a", o.Places, got, tc.wantPlace)
			}
			if !strings.Contains(o.Short["spot"], "limit") {
				t.Fatalf("short %v, want nodepool spot's limit", o.Short)
			}
			room := capacitybuffer.Room{Chunks: 5, Plan: o}
			places, short, why := room.In("general")
			if capacitybuffer.Held(places) != 3 || short != 0 || why != "" {
				t.Fatalf("in general: %v, %d short (%q); want 3 chunks held, none short", places, short, why)
			}
			if places, short, why = room.In("spot"); capacitybuffer.Held(places) != 1 || short != 1 || why == "" {
				t.Fatalf("in spot: %v, %d short (%q); want 1 held, 1 short with why", places, short, why)
			}
		})
	}

	var s capacitybuffer.Store
	s.Set(key, capacitybuffer.Count{Chunks: 5, Quota: "ResourceQuota q"}, vp)
	if r := s.Rooms(); len(r) != 1 || r[0].Plan != nil || r[0].Quota == "" {
		t.Fatalf("rooms before a pass %+v, want one, not planned, quota-limited", r)
	}
	stale := capacitybuffer.Outcomes(snap, &scheduling.Plan{Existing: []scheduling.ExistingPlacement{{Node: "node-a", Pods: vp[:1]}}}, nil, nil)
	s.Record(stale)
	if r := s.Rooms(); r[0].Plan != nil {
		t.Fatalf("a plan of 1 chunk recorded for a buffer of 5: %+v", r[0].Plan)
	}
	s.Record(capacitybuffer.Outcomes(snap, plan, []string{"spot-xyz"}, nil))
	if r := s.Rooms(); r[0].Plan == nil || len(r[0].Plan.Places) != 3 {
		t.Fatalf("rooms after a pass %+v, want the plan's 3 places", r)
	}
	for _, tc := range []struct {
		nodes []string
		want  int
	}{
		{nodes: []string{"node-a"}, want: 1},
		{nodes: []string{"node-x", "general-abc"}, want: 1}, // the Node of NodeClaim general-abc
		{nodes: []string{"general-def"}, want: 1},
		{nodes: []string{"node-z", "spot-xyz"}, want: 1}, // the Node of the NodeClaim the pass launched
		{nodes: []string{"node-b"}, want: 0},
		{nodes: []string{""}, want: 0},
	} {
		if got := s.HoldsRoomOn(tc.nodes...); len(got) != tc.want {
			t.Errorf("HoldsRoomOn(%q) = %v, want %d buffer(s)", tc.nodes, got, tc.want)
		}
	}
	if !s.Planned() {
		t.Error("Planned() = false after a pass recorded the room")
	}
	s.Set(key, capacitybuffer.Count{Chunks: 4}, vp[:4])
	if r := s.Rooms(); r[0].Plan != nil {
		t.Fatalf("room kept across a count change: %+v", r[0].Plan)
	}
	s.Delete(key)
	if r := s.Rooms(); len(r) != 0 || len(s.Pods()) != 0 {
		t.Fatalf("rooms %v, pods %d after delete", r, len(s.Pods()))
	}
}
