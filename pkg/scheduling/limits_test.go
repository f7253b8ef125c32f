package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestLimitsAreSolverInput checks that the solver alone enforces a
// NodePool's limits, counting what is in use (existing and in-flight
// NodeClaims, given as InUse) and keeping only the launch options that stay
// within the limits whichever the cloud picks; the provisioner launches
// what the plan says.
func TestLimitsAreSolverInput(t *testing.T) {
	types := func() []*scheduling.InstanceType {
		return []*scheduling.InstanceType{instanceType("small", 2), instanceType("large", 8)}
	}
	tests := []struct {
		name         string
		limits       corev1.ResourceList
		inUse        corev1.ResourceList
		pods         []*corev1.Pod
		wantTypes    [][]string
		wantRejected int
		wantLimit    corev1.ResourceName
	}{
		{
			name:      "no limits keeps every option",
			pods:      one(pod("p", "1500m", "")),
			wantTypes: [][]string{{"small", "large"}},
		},
		{
			name:      "a limit drops the options that would exceed it",
			limits:    list("cpu", "6"),
			pods:      one(pod("p", "1500m", "")),
			wantTypes: [][]string{{"small"}},
		},
		{
			name:         "usage counts against the limit, pessimistically per claim",
			limits:       list("cpu", "10"),
			inUse:        list("cpu", "4"),
			pods:         pods(4, "p", "1500m", ""),
			wantTypes:    [][]string{{"small"}, {"small"}, {"small"}},
			wantRejected: 1, wantLimit: corev1.ResourceCPU,
		},
		{
			name:         "node count limit",
			limits:       list("nodes", "1"),
			pods:         pods(2, "p", "5", ""),
			wantTypes:    [][]string{{"large"}},
			wantRejected: 1, wantLimit: "nodes",
		},
		{
			name:         "in-flight NodeClaims count against the node limit",
			limits:       list("nodes", "2"),
			inUse:        list("nodes", "2", "cpu", "16"),
			pods:         one(pod("p", "1", "")),
			wantRejected: 1, wantLimit: "nodes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := nodePool("default")
			np.Limits, np.InUse = tt.limits, tt.inUse
			s := snapshot([]*scheduling.NodePool{np}, types(), tt.pods)
			plan, err := scheduling.Solve(s, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, s, plan)
			var got [][]string
			for _, nc := range plan.NewNodeClaims {
				var names []string
				for _, it := range nc.InstanceTypes {
					names = append(names, it.Name)
				}
				got = append(got, names)
			}
			if !slices.EqualFunc(got, tt.wantTypes, slices.Equal) {
				t.Errorf("launch options %v, want %v", got, tt.wantTypes)
			}
			if len(plan.Unschedulable) != tt.wantRejected {
				t.Fatalf("%d pods rejected, want %d", len(plan.Unschedulable), tt.wantRejected)
			}
			for _, pe := range plan.Unschedulable {
				if l, ok := pe.NodePools["default"].(scheduling.Limit); !ok || l.Resource != tt.wantLimit {
					t.Errorf("reason %#v, want Limit{%s}", pe.NodePools["default"], tt.wantLimit)
				}
			}
		})
	}
}

// TestInstanceTypeCapAfterMinValues checks that the cap on launch options
// keeps first the types minValues needs, then the cheapest of the rest.
func TestInstanceTypeCapAfterMinValues(t *testing.T) {
	const family = "karpenter.k8s.aws/instance-family"
	its := []*scheduling.InstanceType{
		instanceType("a1", 1, withLabel(family, "a")),
		instanceType("a2", 2, withLabel(family, "a")),
		instanceType("a3", 3, withLabel(family, "a")),
		instanceType("b4", 4, withLabel(family, "b")),
		instanceType("c5", 5, withLabel(family, "c")),
	}
	tests := []struct {
		name      string
		cap       int
		minValues int
		want      []string
	}{
		{name: "cheapest up to the cap", cap: 2, want: []string{"a1", "a2"}},
		{name: "minValues first, then the cheapest", cap: 4, minValues: 3, want: []string{"a1", "a2", "b4", "c5"}},
		{name: "minValues beyond the cap wins", cap: 2, minValues: 3, want: []string{"a1", "b4", "c5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := nodePool("default")
			if tt.minValues > 0 {
				poolMinValues(family, tt.minValues)(np)
			}
			s := snapshot([]*scheduling.NodePool{np}, its, one(pod("p", "500m", "")))
			plan, err := scheduling.Solve(s, scheduling.Options{MaxInstanceTypes: tt.cap})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewNodeClaims) != 1 {
				t.Fatalf("%d new nodes, want 1", len(plan.NewNodeClaims))
			}
			var got []string
			for _, it := range plan.NewNodeClaims[0].InstanceTypes {
				got = append(got, it.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("options %v, want %v", got, tt.want)
			}
		})
	}
}
