package lowerbound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestConfigurationsLargeNodes is generic-5000 in small: pods of every
// pairing of five CPU and six memory sizes, node types of 1 to 128 vCPU
// at one price per vCPU (2 GiB each, less 100m and 10 MiB reserved), so
// the cheapest nodes per pod are the largest, holding a hundred pods or
// more. The branch and bound's pricing, following its surrogate's order
// under its work budget, finds no column that prices out on those nodes
// (it fills them with the memory-heavy pods first) and the generation
// stopped with its master 0.11 % above the resource LP and the bound
// 4.5 % below it, not converged; the configuration LP is within a
// ten-thousandth of the resource LP here (the nodes are large to the
// pods), so a converged bound is that LP.
func TestConfigurationsLargeNodes(t *testing.T) {
	var types []*scheduling.InstanceType
	for _, k := range []int64{1, 2, 4, 8, 16, 32, 64, 128} {
		it := instanceType(fmt.Sprintf("n%d", k), fmt.Sprint(k), fmt.Sprintf("%dGi", 2*k), 10*k,
			scheduling.Offering{Zone: "a", CapacityType: "on-demand", Price: 0.3147483648 * float64(k), Available: true})
		it.Overhead.KubeReserved = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("10Mi")}
		types = append(types, it)
	}
	var pods []*corev1.Pod
	for _, cpu := range []string{"100m", "250m", "500m", "1", "1500m"} {
		for _, mem := range []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"} {
			for i := range 20 {
				pods = append(pods, pod(fmt.Sprintf("%s-%s-%d", cpu, mem, i), cpu, mem))
			}
		}
	}
	s := &scheduling.Snapshot{NodePools: []*scheduling.NodePool{{Name: "p"}}, Pods: pods,
		InstanceTypes: map[string][]*scheduling.InstanceType{"p": types}}
	lp, err := Compute(s, scheduling.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Configurations(s, scheduling.Options{}, ConfigLimits{})
	if err != nil {
		t.Fatal(err)
	}
	// Each configuration fits its node, so the resource LP bounds the
	// configuration LP from below; converged, the bound is that LP to
	// the tolerance.
	if !got.Converged || got.Value < lp.LP*(1-1e-4) {
		t.Errorf("configuration bound %.4f (master %.4f, converged %v, %d iterations), want the resource LP %.4f",
			got.Value, got.LP, got.Converged, got.Iterations, lp.LP)
	}
}

// TestRelaxation holds the pricing's linear relaxation to the truth on
// random small knapsacks: its bound never below the enumerated optimum,
// its optimum feasible and worth its bound (so both are the relaxation's
// value: the simplex stopped at the optimum), and the rounded
// configuration feasible (capacity, each class's bound, one member of
// each anti-affinity group) and worth at most the optimum.
func TestRelaxation(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 600 {
		dims := 1 + r.IntN(3)
		k := knapsack{cap: make([]int64, dims)}
		for d := range dims {
			k.cap[d] = int64(5 + r.IntN(40))
		}
		nGroups := r.IntN(3)
		for range 1 + r.IntN(6) {
			req := make([]int64, dims)
			for d := range dims {
				req[d] = int64(r.IntN(9))
			}
			addRandomClass(r, &k, req, math.Round(r.Float64()*100)/10-1, 6, nGroups)
		}
		want := bruteKnapsack(&k)
		rx := relax(&k)
		ub := rx.bound(&k)
		if ub < want-1e-9 {
			t.Fatalf("case %d: relaxation bound %v below the optimum %v (%+v)", i, ub, want, k)
		}
		val := 0.0
		used := make([]float64, dims)
		for c, x := range rx.x {
			if x < -1e-9 || x > float64(k.bound[c])+1e-9 || (x > 1e-9 && k.val[c] <= 0) {
				t.Fatalf("case %d: class %d at %v of bound %d (%+v)", i, c, x, k.bound[c], k)
			}
			val += x * k.val[c]
			for d, q := range k.req[c] {
				used[d] += x * float64(q)
			}
		}
		for d := range used {
			if used[d] > float64(k.cap[d])*(1+1e-9) {
				t.Fatalf("case %d: relaxation %v overfills dimension %d (%+v)", i, rx.x, d, k)
			}
		}
		if math.Abs(val-ub) > 1e-9*max(1, ub) {
			t.Fatalf("case %d: relaxation's optimum worth %v, its bound %v (%+v)", i, val, ub, k)
		}
		n := rx.round(&k, nGroups, 1<<20)
		got := 0.0
		rem := slices.Clone(k.cap)
		members := map[int]int{}
		for c, q := range n {
			got += float64(q) * k.val[c]
			for d, s := range k.req[c] {
				rem[d] -= int64(q) * s
			}
			if q > 0 {
				for _, g := range k.groups[c] {
					members[g] += q
				}
			}
			if q < 0 || q > k.bound[c] {
				t.Fatalf("case %d: rounded %v takes %d of class %d, bound %d", i, n, q, c, k.bound[c])
			}
		}
		if slices.ContainsFunc(rem, func(v int64) bool { return v < 0 }) {
			t.Fatalf("case %d: rounded %v overfills (%+v)", i, n, k)
		}
		for g, m := range members {
			if m > 1 {
				t.Fatalf("case %d: rounded %v takes %d members of group %d", i, n, m, g)
			}
		}
		if got > want+1e-9 {
			t.Fatalf("case %d: rounded %v worth %v above the optimum %v", i, n, got, want)
		}
	}
}
