package scheduling_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scenario"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestPreparedSolvesAsSolve runs series of simulations the way
// consolidation does (a window of nodes removed, their pods pending
// beside the cluster's) through one Prepared and compares every plan with
// Solve's on the same snapshot: the Prepared only caches, so the plans
// must be equal, field for field. The hand-made cluster makes the caches'
// keys matter: equal anti-affinity terms in two namespaces (one group
// each), equal labels in two namespaces (each counted by its own
// namespace's spread), host ports, a terminal pod, a preference no node
// meets (relaxed, its second step fits where its first does not), and
// a simulation whose pending pod asks for a resource no other list names
// (the resource dimensions change, and the cached requests may not be
// read in them).
func TestPreparedSolvesAsSolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap func(t *testing.T) *scheduling.Snapshot
		// windows are the simulations: [from, to) of the snapshot's nodes
		// removed, their pods pending.
		windows [][2]int
	}{
		{name: "hand-made", snap: handMadeCluster, windows: [][2]int{{0, 1}, {2, 4}, {5, 6}, {4, 5}, {0, 1}, {2, 6}}},
		{name: "diverse-1000.half", snap: sharedHalfCluster("diverse-1000"), windows: [][2]int{{0, 20}, {20, 40}, {0, 5}, {100, 160}, {0, 20}, {150, 152}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.snap(t)
			for how, opts := range map[string]scheduling.Options{"as consolidation simulates": {RequirePreferences: true, NoExchanges: true}, "as provisioning solves": {}} {
				pr := scheduling.NewPrepared()
				for _, w := range tc.windows {
					snap := without(base, w[0], w[1])
					want, err := scheduling.Solve(snap, opts)
					if err != nil {
						t.Fatal(err)
					}
					got, err := pr.Solve(snap, opts)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s, nodes %d-%d removed: the prepared plan differs from Solve's\nprepared:\n%s\nsolve:\n%s", how, w[0], w[1], planText(got), planText(want))
					}
				}
			}
		})
	}
}

// without is s with nodes [from, to) removed and their pods pending after
// s's own.
func without(s *scheduling.Snapshot, from, to int) *scheduling.Snapshot {
	out := *s
	out.Pods = append([]*corev1.Pod(nil), s.Pods...)
	out.Nodes = nil
	for i, n := range s.Nodes {
		if i >= from && i < to {
			out.Pods = append(out.Pods, n.Pods...)
			continue
		}
		out.Nodes = append(out.Nodes, n)
	}
	return &out
}

func sharedHalfCluster(name string) func(t *testing.T) *scheduling.Snapshot {
	return func(t *testing.T) *scheduling.Snapshot {
		c, err := scenario.LoadHalfCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		return c.Snapshot(time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC))
	}
}

func handMadeCluster(t *testing.T) *scheduling.Snapshot {
	zones := []string{"zone-a", "zone-b"}
	anti := requiredAntiAffinity(corev1.LabelHostname, map[string]string{"app": "web"})
	// Guards keep batch pods of their own namespace off their node: the
	// same term in two namespaces is two groups.
	guard := requiredAntiAffinity(corev1.LabelHostname, map[string]string{"app": "batch"})
	s := snapshot([]*scheduling.NodePool{nodePool("default")}, catalog(), nil)
	for i := range 6 {
		name := fmt.Sprintf("node-%d", i)
		n := &scheduling.ExistingNode{Name: name, NodeClaim: name, NodePool: "default", Initialized: true,
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zones[i%2], "karpenter.sh/capacity-type": "on-demand"},
			Allocatable: list("cpu", "4", "memory", "16Gi", "pods", "30")}
		for j, ns := range []string{"default", "other"} {
			p := pod(fmt.Sprintf("web-%d-%d", i, j), "500m", "1Gi", labeled("app", "web"), anti)
			p.Namespace = ns
			n.Pods = append(n.Pods, p)
		}
		g := pod(fmt.Sprintf("guard-%d", i), "100m", "128Mi", labeled("app", "guard"), guard)
		if i != 1 {
			g.Namespace = "other"
		}
		// Spread pods of the same labels in two namespaces, one per
		// zone: each namespace counts its own.
		sp := pod(fmt.Sprintf("spread-%d", i), "1", "2Gi", labeled("app", "spread"),
			spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "spread"}))
		if i%2 == 1 {
			sp.Namespace = "other"
		}
		n.Pods = append(n.Pods, g, sp, pod(fmt.Sprintf("batch-%d", i), "250m", "512Mi", labeled("app", "batch")))
		switch i {
		case 1:
			p := pod("ported", "100m", "128Mi", labeled("app", "ported"))
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080}}
			n.Pods = append(n.Pods, p)
		case 2:
			p := pod("done", "2", "4Gi", labeled("app", "batch"))
			p.Status.Phase = corev1.PodSucceeded
			n.Pods = append(n.Pods, p)
		case 5:
			// Bound, its resource is in no list; pending (node-5
			// removed), it adds a dimension.
			n.Pods = append(n.Pods, pod("dongled", "100m", "128Mi", request("example.com/dongle", "1")))
		}
		s.Nodes = append(s.Nodes, n)
	}
	// Batch pods of the default namespace: one may land on node-1 only,
	// where the default namespace's guard keeps it out.
	s.Pods = append(pods(3, "pending", "300m", "256Mi", labeled("app", "batch")),
		pod("pinned", "300m", "256Mi", labeled("app", "batch"), nodeSelector(corev1.LabelHostname, "node-1")))
	s.Pods = append(s.Pods, pods(2, "spread-pending", "1", "2Gi", labeled("app", "spread"),
		spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "spread"}))...)
	// A preference no node meets: provisioning relaxes it, and the
	// relaxed step may land where the first may not.
	s.Pods = append(s.Pods, pod("picky", "100m", "128Mi", labeled("app", "picky"),
		preferredTerm(10, expr("example.com/tier", corev1.NodeSelectorOpIn, "gold"))))
	return s
}

// TestBoundPodsCountInTheirNamespace: the setup numbers bound pods' label
// sets and anti-affinity terms once (Prepared); pods and terms equal but
// for their namespace must stay apart, with or without a Prepared.
func TestBoundPodsCountInTheirNamespace(t *testing.T) {
	inNamespace := func(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }
	batchGuard := requiredAntiAffinity(corev1.LabelHostname, map[string]string{"app": "batch"})
	zoneSpread := spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "spread"})
	for _, tc := range []struct {
		name string
		// bound are node-0's (zone-a) and node-1's (zone-b) pods.
		bound   [2][]*corev1.Pod
		pending []*corev1.Pod
		// want is where each pending pod lands ("" unschedulable).
		want map[string]string
	}{
		{
			name: "a guard keeps out its own namespace's pods only",
			bound: [2][]*corev1.Pod{
				{pod("guard-other", "100m", "128Mi", labeled("app", "guard"), batchGuard, inNamespace("other"))},
				{pod("guard-default", "100m", "128Mi", labeled("app", "guard"), batchGuard)},
			},
			pending: []*corev1.Pod{
				pod("to-0", "100m", "128Mi", labeled("app", "batch"), nodeSelector(corev1.LabelHostname, "node-0")),
				pod("to-1", "100m", "128Mi", labeled("app", "batch"), nodeSelector(corev1.LabelHostname, "node-1")),
			},
			want: map[string]string{"to-0": "node-0", "to-1": ""},
		},
		{
			name: "a spread counts its own namespace's pods only",
			bound: [2][]*corev1.Pod{
				{pod("spread-default", "100m", "128Mi", labeled("app", "spread"), zoneSpread)},
				{pod("spread-other", "100m", "128Mi", labeled("app", "spread"), zoneSpread, inNamespace("other"))},
			},
			pending: []*corev1.Pod{pod("spread-new", "100m", "128Mi", labeled("app", "spread"), zoneSpread)},
			want:    map[string]string{"spread-new": "node-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(nil, nil, tc.pending)
			for i, zone := range []string{"zone-a", "zone-b"} {
				name := fmt.Sprintf("node-%d", i)
				s.Nodes = append(s.Nodes, &scheduling.ExistingNode{Name: name, Initialized: true, Pods: tc.bound[i],
					Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone},
					Allocatable: list("cpu", "4", "memory", "16Gi", "pods", "30")})
			}
			for how, solve := range map[string]func(*scheduling.Snapshot, scheduling.Options) (*scheduling.Plan, error){
				"Solve": scheduling.Solve, "Prepared.Solve": scheduling.NewPrepared().Solve,
			} {
				plan, err := solve(s, scheduling.Options{})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, e := range plan.Existing {
					for _, p := range e.Pods {
						got[p.Name] = e.Node
					}
				}
				for _, pe := range plan.Unschedulable {
					got[pe.Pod.Name] = ""
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s: pods landed %v, want %v", how, got, tc.want)
				}
			}
		})
	}
}
