package statuspage

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

func TestBuild(t *testing.T) {
	type nodeWant struct {
		name, status           string
		price                  float64
		priced                 bool
		pods, incoming         int
		cpuBound, cpuIncoming  float64 // percent
		memBound, memIncoming  float64 // percent
		instanceType, capacity string
	}
	type pendingWant struct {
		pod, verdict, target string
		reasons              int
	}
	cases := []struct {
		name      string
		in        func() Input
		nodes     []nodeWant
		pending   []pendingWant
		summary   Summary
		costs     []float64
		lastLabel string
	}{
		{
			name: "live cluster with the last batch's verdicts",
			in: func() Input {
				snap := cluster()
				return Input{Snapshot: snap, Plan: lastBatch(snap)}
			},
			nodes: []nodeWant{
				// ready first, by nodepool ("" sorts before "default"), then launching, then deleting.
				{name: "control-plane", status: StatusReady, pods: 1, cpuBound: 5, memBound: 100 * 70.0 / (8 * 1024), instanceType: "m5.large"},
				{name: "default-abcde", status: StatusReady, price: 0.15, priced: true, pods: 3, cpuBound: 100 * 4.1 / 8, memBound: 100 * (8*1024 + 128) / (32 * 1024.0), instanceType: "large", capacity: "spot"},
				{name: "default-fghij", status: StatusLaunching, incoming: 1, cpuIncoming: 55, memIncoming: 100 * 1152 / 4096.0},
				{name: "default-klmno", status: StatusDeleting, price: 0.05, priced: true, pods: 1, cpuBound: 5, memBound: 100 * 128 / 4096.0, instanceType: "small", capacity: "on-demand"},
			},
			pending: []pendingWant{
				{pod: "batch/huge", verdict: VerdictUnschedulable, reasons: 2},
				{pod: "shop/web-3", verdict: VerdictWaiting},
				{pod: "shop/web-4", verdict: VerdictWaiting},
				{pod: "shop/web-2", verdict: VerdictNominated, target: "nodeclaim/default-fghij"},
			},
			summary: Summary{Nodes: 4, PodsRunning: 5, PodsPending: 4, Unschedulable: 1, CostPerHour: 0.20, PlannedCostPerHour: 0.20, UnpricedNodes: 2},
			costs:   []float64{0.20},
		},
		{
			name: "history is kept and the snapshot's sample appended",
			in: func() Input {
				snap := cluster()
				return Input{Snapshot: snap, History: []Sample{
					{At: now.Add(-time.Minute), CostPerHour: 0.05, Nodes: 1},
					{At: now.Add(-30 * time.Second), CostPerHour: 0.15, Nodes: 2},
				}}
			},
			summary: Summary{Nodes: 4, PodsRunning: 5, PodsPending: 4, CostPerHour: 0.20, PlannedCostPerHour: 0.20, UnpricedNodes: 2},
			costs:   []float64{0.05, 0.15, 0.20},
		},
		{
			name: "simulated plan: placements, a new node, the cost step",
			in: func() Input {
				snap := cluster()
				return Input{Snapshot: snap, Plan: whatIf(snap)}
			},
			pending: []pendingWant{
				{pod: "batch/huge", verdict: VerdictUnschedulable, reasons: 2},
				{pod: "shop/web-2", verdict: VerdictNominated, target: "nodeclaim/default-fghij"},
				{pod: "shop/web-3", verdict: VerdictPlaced, target: "default-abcde"},
				{pod: "shop/web-4", verdict: VerdictNewNode, target: "new node 1 (nodepool default)"},
			},
			summary:   Summary{Nodes: 4, PlannedNodes: 1, PodsRunning: 5, PodsPending: 4, Unschedulable: 1, CostPerHour: 0.20, PlannedCostPerHour: 0.22, UnpricedNodes: 2},
			costs:     []float64{0.20, 0.22},
			lastLabel: "after the plan",
		},
		{
			name: "a burstable node costs its credits and volumes, unless list prices are asked for",
			in:   func() Input { return Input{Snapshot: burstable()} },
			nodes: []nodeWant{
				// 0.0168 listed + (2 − 0.4) vCPU × $0.05 of surplus credits + $0.002 of volume.
				{name: "burst-1", status: StatusReady, price: 0.0168 + 0.08 + 0.002, priced: true, pods: 1, cpuBound: 100, memBound: 25, instanceType: "t4g.small", capacity: "on-demand"},
			},
			summary: Summary{Nodes: 1, PodsRunning: 1, CostPerHour: 0.0988, PlannedCostPerHour: 0.0988},
			costs:   []float64{0.0988},
		},
		{
			name: "list prices: the offering's price alone",
			in:   func() Input { return Input{Snapshot: burstable(), Plan: &scheduling.Plan{ListPrices: true}} },
			nodes: []nodeWant{
				{name: "burst-1", status: StatusReady, price: 0.0168, priced: true, pods: 1, cpuBound: 100, memBound: 25, instanceType: "t4g.small", capacity: "on-demand"},
			},
			summary: Summary{Nodes: 1, PodsRunning: 1, CostPerHour: 0.0168, PlannedCostPerHour: 0.0168},
			costs:   []float64{0.0168},
		},
		{
			name:    "empty input",
			in:      func() Input { return Input{} },
			summary: Summary{},
			costs:   []float64{0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Build(tc.in())
			if tc.nodes != nil {
				if len(v.Nodes) != len(tc.nodes) {
					t.Fatalf("got %d nodes, want %d: %+v", len(v.Nodes), len(tc.nodes), v.Nodes)
				}
				for i, w := range tc.nodes {
					n := v.Nodes[i]
					if n.Name != w.name || n.Status != w.status || n.Priced != w.priced || !near(n.Price, w.price) || n.Pods != w.pods || n.Incoming != w.incoming ||
						n.InstanceType != w.instanceType || n.CapacityType != w.capacity {
						t.Errorf("node %d = %+v, want %+v", i, n, w)
					}
					for _, bar := range []struct {
						what      string
						got, want float64
					}{
						{"cpu bound", n.CPU.BoundPercent, w.cpuBound}, {"cpu incoming", n.CPU.IncomingPercent, w.cpuIncoming},
						{"memory bound", n.Memory.BoundPercent, w.memBound}, {"memory incoming", n.Memory.IncomingPercent, w.memIncoming},
					} {
						if math.Abs(bar.got-bar.want) > 0.01 {
							t.Errorf("node %s: %s = %.3f%%, want %.3f%%", n.Name, bar.what, bar.got, bar.want)
						}
					}
				}
			}
			if tc.pending != nil {
				if len(v.Pending) != len(tc.pending) {
					t.Fatalf("got %d pending pods, want %d: %+v", len(v.Pending), len(tc.pending), v.Pending)
				}
				for i, w := range tc.pending {
					p := v.Pending[i]
					if p.Pod != w.pod || p.Verdict != w.verdict || p.Target != w.target || len(p.Reasons) != w.reasons {
						t.Errorf("pending %d = %+v, want %+v", i, p, w)
					}
				}
			}
			s := v.Summary
			if s.Nodes != tc.summary.Nodes || s.PlannedNodes != tc.summary.PlannedNodes || s.PodsRunning != tc.summary.PodsRunning ||
				s.PodsPending != tc.summary.PodsPending || s.Unschedulable != tc.summary.Unschedulable || s.UnpricedNodes != tc.summary.UnpricedNodes ||
				!near(s.CostPerHour, tc.summary.CostPerHour) || !near(s.PlannedCostPerHour, tc.summary.PlannedCostPerHour) {
				t.Errorf("summary = %+v, want %+v", s, tc.summary)
			}
			if len(v.Cost) != len(tc.costs) {
				t.Fatalf("cost samples = %+v, want %v", v.Cost, tc.costs)
			}
			for i, c := range tc.costs {
				if !near(v.Cost[i].CostPerHour, c) {
					t.Errorf("cost sample %d = %v, want %v", i, v.Cost[i].CostPerHour, c)
				}
			}
			if got := v.Cost[len(v.Cost)-1].Label; got != tc.lastLabel {
				t.Errorf("last sample's label = %q, want %q", got, tc.lastLabel)
			}
		})
	}
}

// The reasons are the solver's, in scheduling.Message's words, existing
// nodes first.
func TestBuildReasons(t *testing.T) {
	snap := cluster()
	plan := lastBatch(snap)
	v := Build(Input{Snapshot: snap, Plan: plan})
	got := v.Pending[0].Reasons
	want := []Reason{
		{Where: "existing nodes", Kind: plan.Unschedulable[0].Existing.Kind(), Message: scheduling.Message(plan.Unschedulable[0].Existing)},
		{Where: `nodepool "default"`, Kind: scheduling.KindNoInstanceType, Message: scheduling.Message(plan.Unschedulable[0].NodePools["default"])},
	}
	if len(got) != len(want) {
		t.Fatalf("reasons = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reason %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if want[0].Message != "3 nodes had insufficient resources; 1 node was marked for deletion" {
		t.Errorf("existing nodes' message = %q", want[0].Message)
	}
}

func TestUsageText(t *testing.T) {
	cases := []struct {
		name                    string
		bound, incoming, alloc  string
		wantText                string
		wantBound, wantIncoming float64
	}{
		{name: "half", bound: "1", incoming: "0", alloc: "2", wantText: "1 core / 2 cores (50%)", wantBound: 50},
		{name: "overcommitted clamps the bar, not the text", bound: "3", incoming: "1", alloc: "2", wantText: "4 cores / 2 cores (200%)", wantBound: 100},
		{name: "incoming fills after bound", bound: "500m", incoming: "250m", alloc: "1", wantText: "0.75 cores / 1 core (75%)", wantBound: 50, wantIncoming: 25},
		{name: "unknown allocatable", bound: "250m", incoming: "0", alloc: "0", wantText: "0.25 cores requested, allocatable unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := usage("cpu", resources(tc.bound, "0"), resources(tc.incoming, "0"), resources(tc.alloc, "0"))
			if tc.alloc == "0" {
				u = usage("cpu", resources(tc.bound, "0"), resources(tc.incoming, "0"), nil)
			}
			if u.Text != tc.wantText || !near(u.BoundPercent, tc.wantBound) || !near(u.IncomingPercent, tc.wantIncoming) {
				t.Errorf("usage = %+v, want text %q bound %v incoming %v", u, tc.wantText, tc.wantBound, tc.wantIncoming)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// bufferRoom is a CapacityBuffer of 2 chunks: one held on the ready node,
// one short (the NodePool's limit), with its virtual pods among the
// snapshot's pending pods.
func bufferRoom(snap *scheduling.Snapshot) capacitybuffer.Room {
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "room", Namespace: "shop", UID: "u"}}
	snap.Pods = append(snap.Pods, capacitybuffer.VirtualPods(cb, capacitybuffer.ChunkPod(cb, &corev1.PodTemplateSpec{}), 2)...)
	return capacitybuffer.Room{Buffer: "shop/room", Chunks: 2, Quota: "ResourceQuota team leaves room for 2 chunk(s) in the namespace", Plan: &capacitybuffer.Outcome{
		Existing: 1, Failed: 1, Short: map[string]string{"default": "nodepool default's cpu limit is reached"},
		Places: []capacitybuffer.Place{{NodePool: "default", Node: "default-abcde", NodeClaim: "default-abcde", Chunks: 1}},
	}}
}

// A CapacityBuffer's room is its own section and marks the nodes holding
// it; its virtual pods are no pending pods.
func TestBuildBuffers(t *testing.T) {
	snap := cluster()
	room := bufferRoom(snap)
	v := Build(Input{Snapshot: snap, Plan: lastBatch(snap), Buffers: []capacitybuffer.Room{room}})
	for _, p := range v.Pending {
		if strings.Contains(p.Pod, "room-buffer") {
			t.Errorf("virtual pod %s listed as pending", p.Pod)
		}
	}
	if want := Build(Input{Snapshot: cluster(), Plan: lastBatch(snap)}).Summary.PodsPending; v.Summary.PodsPending != want {
		t.Errorf("pods pending = %d, want the %d real ones", v.Summary.PodsPending, want)
	}
	want := Buffer{Buffer: "shop/room", Chunks: 2, Held: 1, Short: 1, Planned: true, Why: `nodepool "default": nodepool default's cpu limit is reached`,
		Cut: room.Quota, Places: []BufferPlace{{Where: "node default-abcde", NodePool: "default", Chunks: 1}}}
	if len(v.Buffers) != 1 || !reflect.DeepEqual(v.Buffers[0], want) {
		t.Fatalf("buffers = %+v, want %+v", v.Buffers, want)
	}
	for _, n := range v.Nodes {
		if got, want := n.BufferChunks, map[string]int{"default-abcde": 1}[n.Name]; got != want {
			t.Errorf("node %s holds %d buffer chunk(s), want %d", n.Name, got, want)
		}
	}
	var buf bytes.Buffer
	if err := Render(&buf, v); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`data-buffer="shop/room" data-held="1" data-chunks="2"`, `data-place="node default-abcde"`, "1 chunk(s) short", "room for 1 buffer chunk(s)"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("page lacks %q", w)
		}
	}
}
